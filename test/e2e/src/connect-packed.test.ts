import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  installedBin,
  installedPackage,
  installTarball,
  packTarball,
} from '@ctxbus/test-kit/packed-cli';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { connectIt, removeDir, tempDir, useConnectMachine } from './connect-world.js';

// The OpenClaw plugin as a package (issue 28): from the published ctxbus (./dev pack, installed
// with npm into an empty prefix), `ctxbus connect` installs the packed plugin tarball into the
// real OpenClaw as OpenClaw installs any npm plugin (no clone, no linked folder), OpenClaw
// loads it, a re-run changes nothing, and disconnect removes it and gives the config back.

const machine = useConnectMachine();
const root = tempDir('ctxbus-connect-packed-');
const prefix = join(root, 'prefix');

beforeAll(async () => {
  if (!machine.openclaw) return; // skipped: OpenClaw cannot run here
  const tarball = await packTarball(join(root, 'out'));
  await installTarball(tarball, prefix, machine.openclaw.home);
}, 600_000);

afterAll(() => removeDir(root));

type Json = Record<string, unknown>;

async function ctxbusPlugin(): Promise<Json | undefined> {
  const result = await machine.openclaw.run(['plugins', 'list', '--json']);
  const list = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { plugins: Json[] };
  return list.plugins.find((entry) => entry.id === 'ctxbus');
}

describe('the packed OpenClaw plugin', () => {
  const installed = () => installedBin(prefix);

  connectIt(
    'connect from the published package installs the plugin package into OpenClaw',
    async () => {
      const original = machine.snapshot();
      const config = machine.openclaw.configPath;
      const version = JSON.parse(
        readFileSync(join(installedPackage(prefix), 'package.json'), 'utf8'),
      ).version as string;
      const result = await machine.ctxbus(['connect', '--only', 'openclaw'], {}, installed());
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain(`will add the ctxbus plugin (package ${version})`);
      expect(result.stdout).toContain(`plugin ctxbus ${version} installed from`);
      const plugin = await ctxbusPlugin();
      expect(plugin).toMatchObject({ status: 'loaded', version });
      expect((plugin?.trust as Json | undefined)?.installSource).toBe('npm');
      // OpenClaw's own copy, in its state directory: nothing points into ctxbus's install.
      expect(String(plugin?.rootDir)).toContain(machine.openclaw.stateDir);
      expect(JSON.stringify(machine.openclaw.readConfig())).not.toContain(prefix);

      const again = await machine.ctxbus(['connect', '--only', 'openclaw'], {}, installed());
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/OpenClaw .*: already connected/);

      const undone = await machine.ctxbus(['disconnect'], {}, installed());
      expect(undone.code, undone.stderr).toBe(0);
      expect(await ctxbusPlugin()).toBeUndefined();
      expect(readFileSync(config)).toEqual(original[config]);
    },
  );
});
