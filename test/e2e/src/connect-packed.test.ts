import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  installedBin,
  installedPackage,
  installTarball,
  packTarball,
} from '@ctxbus/test-kit/packed-cli';
import type { JourneyMachine } from '@ctxbus/test-kit/packed-journey';
import {
  createJourneyMachine,
  journeyLine,
  runDecisionJourney,
  stepsLine,
} from '@ctxbus/test-kit/packed-journey';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import {
  BIN_DIR,
  connectIt,
  countOpenClawStarts,
  removeDir,
  tempDir,
  useConnectMachine,
} from './connect-world.js';
import { roleText } from './scripted-openai-model.js';

// The published ctxbus (./dev pack, installed with npm into an empty prefix), end to end
// (issue 28). First the whole way a person goes, timed: from the tarball to a decision stated
// in the real Claude Code reaching the real OpenClaw's next model request, through `ctxbus
// serve` and `ctxbus connect` on a clean HOME. Then the OpenClaw plugin as a package: `ctxbus
// connect` installs the packed plugin tarball into the real OpenClaw as OpenClaw installs any
// npm plugin (no clone, no linked folder), OpenClaw loads it, a re-run changes nothing, and
// disconnect removes it and gives the config back. The tarball is packed once and installed
// once, by whichever test runs first (CI time: a pack and an install cost ~10 s).

const machine = useConnectMachine();
const openclaw = countOpenClawStarts(machine);
const root = tempDir('ctxbus-connect-packed-');
const prefix = join(root, 'prefix');
let tarball = '';
let installing: Promise<void> | undefined;

/** Installs the tarball into `prefix` (npm, HOME=`home`) the first time; later calls reuse it. */
const install = (home: string) => {
  installing ??= installTarball(tarball, prefix, home);
  return installing;
};

beforeAll(async () => {
  if (!machine.openclaw) return; // skipped: OpenClaw cannot run here
  tarball = await packTarball(join(root, 'out'));
}, 600_000);

afterAll(() => removeDir(root));

describe('from the packed tarball on a clean HOME', () => {
  let world: JourneyMachine | undefined;
  beforeAll(async () => {
    if (!machine.openclaw) return;
    world = await createJourneyMachine(BIN_DIR);
  });
  afterAll(() => world?.close());

  connectIt(
    "install, serve, connect: a decision stated in Claude Code reaches OpenClaw's next model request",
    async () => {
      const on = world as JourneyMachine;
      const installedEarlier = installing !== undefined;
      const journey = await runDecisionJourney(on, prefix, () => install(on.home));
      console.log(journeyLine(journey.times, installedEarlier ? ' (done earlier, not timed)' : ''));
      console.log(`ctxbus connect, step by step: ${stepsLine(journey.connect)}`);
      expect(journey.connect.stdout).toContain('connected Claude Code');
      expect(journey.connect.stdout).toContain('connected OpenClaw');
      const sent = journey.seenRequest;
      expect(sent, 'OpenClaw sent its model no request').toBeDefined();
      const user = roleText(sent as NonNullable<typeof sent>, 'user');
      expect(user).toContain('<team-context source="ctxbus">');
      expect(user).toContain(journey.decision);
      expect(Number.isFinite(journey.times.seen)).toBe(true);
    },
  );
});

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
      await install(machine.openclaw.home);
      const original = machine.snapshot();
      const config = machine.openclaw.configPath;
      const version = JSON.parse(
        readFileSync(join(installedPackage(prefix), 'package.json'), 'utf8'),
      ).version as string;
      const path = { PATH: openclaw.path };
      const result = await machine.ctxbus(['connect', '--only', 'openclaw'], path, installed());
      expect(result.code, result.stderr).toBe(0);
      // OpenClaw started only to change something (its config read in place, no plugin in it).
      expect(openclaw.take()).toEqual(['plugins install', 'config patch']);
      expect(result.stdout).toContain(`will add the ctxbus plugin (package ${version})`);
      expect(result.stdout).toContain(`plugin ctxbus ${version} installed from`);
      const plugin = await ctxbusPlugin();
      expect(plugin).toMatchObject({ status: 'loaded', version });
      expect((plugin?.trust as Json | undefined)?.installSource).toBe('npm');
      // OpenClaw's own copy, in its state directory: nothing points into ctxbus's install.
      expect(String(plugin?.rootDir)).toContain(machine.openclaw.stateDir);
      expect(JSON.stringify(machine.openclaw.readConfig())).not.toContain(prefix);

      const again = await machine.ctxbus(['connect', '--only', 'openclaw'], path, installed());
      expect(again.code, again.stderr).toBe(0);
      expect(openclaw.take()).toEqual(['plugins list']); // which version OpenClaw has
      expect(again.stdout).toMatch(/OpenClaw .*: already connected/);

      const undone = await machine.ctxbus(['disconnect'], path, installed());
      expect(undone.code, undone.stderr).toBe(0);
      expect(openclaw.take()).toEqual(['plugins list', 'plugins uninstall', 'config patch']);
      expect(await ctxbusPlugin()).toBeUndefined();
      expect(readFileSync(config)).toEqual(original[config]);
    },
  );
});
