// Prints what the dashboard weighs, as the browser downloads it (gzip), and fails the build
// over the budget (200 KB gzipped, issue 15).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET_BYTES = 200 * 1024;
const root = new URL('../dist/', import.meta.url).pathname;

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

let raw = 0;
let gzipped = 0;
const rows = [];
for (const path of files(root)) {
  const bytes = readFileSync(path);
  const gz = gzipSync(bytes, { level: 9 }).length;
  raw += bytes.length;
  gzipped += gz;
  rows.push(
    `  ${relative(root, path).padEnd(40)} ${(bytes.length / 1024).toFixed(1).padStart(7)} KB  ${(gz / 1024).toFixed(1).padStart(6)} KB gzip`,
  );
}
process.stdout.write(
  `dashboard bundle:\n${rows.join('\n')}\n  total ${(raw / 1024).toFixed(1)} KB, ${(gzipped / 1024).toFixed(1)} KB gzipped (budget ${BUDGET_BYTES / 1024} KB)\n`,
);
if (gzipped > BUDGET_BYTES) {
  process.stderr.write(
    `dashboard bundle is over its budget: ${(gzipped / 1024).toFixed(1)} KB gzipped > 200 KB\n`,
  );
  process.exit(1);
}
