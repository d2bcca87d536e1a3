// The audit log: hash-chained records, their verification and the audit half of the hub's API.
export type { VerifyAuditResponse } from './audit-api-schemas.js';
export { MAX_AUDIT_PAGE } from './audit-api-schemas.js';
export type { AuditEvent, AuditKind, AuditRecord, AuditVerification } from './audit-chain.js';
export {
  AUDIT_GENESIS,
  AuditChainVerifier,
  auditEventSchema,
  chainAuditRecord,
} from './audit-chain.js';
