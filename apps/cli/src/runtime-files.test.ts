import { describe, expect, it } from 'vitest';
import { npxCacheDir } from './runtime-files.js';

describe('npxCacheDir', () => {
  it("finds npx's cache directory in the path the CLI runs from", () => {
    expect(
      npxCacheDir('/home/a/.npm/_npx/0137cae10ae8a7bf/node_modules/ctxbus/dist/chunk-X.js'),
    ).toBe('/home/a/.npm/_npx/0137cae10ae8a7bf');
  });

  it('is null for an installed package and for a clone', () => {
    expect(npxCacheDir('/usr/lib/node_modules/ctxbus/dist/chunk-X.js')).toBeNull();
    expect(npxCacheDir('/home/a/src/ctxbus/apps/cli/dist/chunk-X.js')).toBeNull();
    expect(npxCacheDir('/home/a/my_npx_tools/ctxbus/dist/x.js')).toBeNull();
  });
});
