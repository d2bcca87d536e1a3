import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@ctxbus/core/contract';
import { CtxbusError } from '@ctxbus/core/light';
import type { HubExtension } from '@ctxbus/hub';

/**
 * Where the built dashboard ships: `dist/web/` beside the CLI's bundle (the CLI's build copies
 * apps/web's output there).
 */
export const DASHBOARD_DIR = fileURLToPath(new URL('./web/', import.meta.url));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

/**
 * The page may load only its own scripts and styles and talk only to this hub: an injected
 * item title cannot bring in a script, and nothing the page holds (the token) can be sent
 * elsewhere.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface Asset {
  body: Uint8Array;
  type: string;
  etag: string;
  immutable: boolean;
}

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}

/** Reads the built dashboard into memory (about 200 KB): the only files the hub will serve. */
export function loadDashboard(dir: string): Map<string, Asset> | null {
  if (!existsSync(join(dir, 'index.html'))) return null;
  const assets = new Map<string, Asset>();
  for (const path of walk(dir)) {
    const body = readFileSync(path);
    const name = `/${relative(dir, path).split(sep).join('/')}`;
    assets.set(name, {
      body,
      type: TYPES[extname(path)] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      // Vite names built assets by their hash: they never change under the same name.
      immutable: name.startsWith('/assets/'),
    });
  }
  return assets;
}

/** The request as the handlers see it (Hono's context, without depending on Hono here). */
interface RequestView {
  req: { method: string; header(name: string): string | undefined };
}

function send(context: RequestView, asset: Asset): Response {
  const headers: Record<string, string> = {
    'content-type': asset.type,
    etag: asset.etag,
    'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  if (asset.type.startsWith('text/html')) {
    headers['content-security-policy'] = DASHBOARD_CSP;
    headers['x-frame-options'] = 'DENY';
  }
  if (context.req.header('if-none-match') === asset.etag) {
    return new Response(null, { status: 304, headers });
  }
  return new Response(context.req.method === 'HEAD' ? null : asset.body, { status: 200, headers });
}

/**
 * The dashboard at `/` (and its files under `/assets/`), same origin as the API, so the page
 * needs no CORS and its token never leaves the hub's origin. A CLI built without it (apps/web
 * not built) serves the API alone and says so at `/`.
 */
export function dashboardExtension(options: { dir?: string; logger: Logger }): HubExtension {
  const dir = options.dir ?? DASHBOARD_DIR;
  return {
    name: 'dashboard',
    mount(app) {
      const assets = loadDashboard(dir);
      if (!assets) {
        options.logger.warn({ dir }, 'the dashboard is not built: / serves nothing');
        app.get('/', (context) =>
          context.json(
            new CtxbusError(
              'not_found',
              'this ctxbus was built without its dashboard (build apps/web, then the CLI)',
            ).toJSON(),
            404,
          ),
        );
        return;
      }
      const index = assets.get('/index.html');
      if (!index) throw new Error('unreachable: loadDashboard checked index.html');
      app.get('/', (context) => send(context, index));
      app.get('/index.html', (context) => send(context, index));
      app.get('/assets/*', (context) => {
        const asset = assets.get(context.req.path);
        return asset ? send(context, asset) : context.notFound();
      });
    },
  };
}
