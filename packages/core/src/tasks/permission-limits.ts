// A runtime's own permission request (POST /api/approvals), the parts hooks need without zod.

/** What `approval.request.because` says for a runtime's own permission request. */
export const PERMISSION_REQUEST_BECAUSE = 'permission_request';

/** Shortest and longest a permission request waits for a person (then it lapses: a deny). */
export const MIN_PERMISSION_WAIT_SECONDS = 10;
export const MAX_PERMISSION_WAIT_SECONDS = 30 * 60;
