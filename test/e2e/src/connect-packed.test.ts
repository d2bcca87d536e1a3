import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { installedPackage, installTarball, packTarball } from '@ctxbus/test-kit/packed-cli';
import type { DecisionJourney, JourneyMachine } from '@ctxbus/test-kit/packed-journey';
import {
  createJourneyMachine,
  installedCtxbus,
  journeyLine,
  runDecisionJourney,
  stepsLine,
} from '@ctxbus/test-kit/packed-journey';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import {
  BIN_DIR,
  connectIt,
  connectSkipped,
  countOpenClawStarts,
  removeDir,
  tempDir,
} from './connect-world.js';
import { roleText } from './scripted-openai-model.js';

// The published ctxbus (./dev pack, installed with npm into an empty prefix), end to end
// (issue 28). First the whole way a person goes, timed: from the tarball to a decision stated
// in the real Claude Code reaching the real OpenClaw's next model request, through `ctxbus
// serve` and `ctxbus connect` on a clean HOME. Then, on that same machine, the OpenClaw plugin
// as a package: that connect installed the packed plugin tarball into the real OpenClaw as
// OpenClaw installs any npm plugin (no clone, no linked folder), OpenClaw loads it from its own
// copy, a re-run changes nothing, and disconnect removes it and gives the config back. One
// machine for both: a plugin install from a tarball costs ~20 s, an OpenClaw start 1-3 s of CPU.

const root = tempDir('ctxbus-connect-packed-');
const prefix = join(root, 'prefix');
/** The journey machine's PATH without the counting wrapper (set once the machine exists). */
const plain = { path: '' };
const openclaw = countOpenClawStarts(plain);
let tarball = '';
let world: JourneyMachine | undefined;
let journey: DecisionJourney | undefined;
/** The journey machine's OpenClaw config before connect: disconnect must give these bytes back. */
let original: Buffer | undefined;

beforeAll(async () => {
  if (connectSkipped) return;
  tarball = await packTarball(join(root, 'out'));
  world = await createJourneyMachine(BIN_DIR);
  // Connect finds OpenClaw through the wrapper that counts its starts.
  plain.path = world.path;
  world.path = openclaw.path;
  original = readFileSync(world.openclaw.configPath);
}, 600_000);

afterAll(async () => {
  await journey?.hub?.stop();
  await world?.close();
  removeDir(root);
});

const on = () => world as JourneyMachine;

type Json = Record<string, unknown>;

async function ctxbusPlugin(): Promise<Json | undefined> {
  const result = await on().openclaw.run(['plugins', 'list', '--json']);
  const list = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as { plugins: Json[] };
  return list.plugins.find((entry) => entry.id === 'ctxbus');
}

const version = () =>
  JSON.parse(readFileSync(join(installedPackage(prefix), 'package.json'), 'utf8'))
    .version as string;

describe('from the packed tarball on a clean HOME', () => {
  connectIt(
    "install, serve, connect: a decision stated in Claude Code reaches OpenClaw's next model request",
    async () => {
      const machine = on();
      journey = await runDecisionJourney(
        machine,
        prefix,
        () => installTarball(tarball, prefix, machine.home),
        { keepHub: true },
      );
      console.log(journeyLine(journey.times));
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

  connectIt(
    'connect from the published package installed the plugin package into OpenClaw; a re-run changes nothing; disconnect removes it',
    async () => {
      const machine = on();
      const connect = journey?.connect;
      if (!connect) throw new Error('the journey did not connect');
      // OpenClaw started only to change something (its config read in place, no plugin in it).
      expect(openclaw.take()).toEqual(['plugins install', 'config patch']);
      expect(connect.stdout).toContain(`will add the ctxbus plugin (package ${version()})`);
      expect(connect.stdout).toContain(`plugin ctxbus ${version()} installed from`);
      const plugin = await ctxbusPlugin();
      expect(plugin).toMatchObject({ status: 'loaded', version: version() });
      expect((plugin?.trust as Json | undefined)?.installSource).toBe('npm');
      // OpenClaw's own copy, in its state directory: nothing points into ctxbus's install.
      expect(String(plugin?.rootDir)).toContain(machine.openclaw.stateDir);
      expect(JSON.stringify(machine.openclaw.readConfig())).not.toContain(prefix);

      const again = await installedCtxbus(machine, prefix, ['connect', '--only', 'openclaw']);
      expect(again.code, again.stderr).toBe(0);
      expect(openclaw.take()).toEqual(['plugins list']); // which version OpenClaw has
      expect(again.stdout).toMatch(/OpenClaw .*: already connected/);

      const undone = await installedCtxbus(machine, prefix, ['disconnect']);
      expect(undone.code, undone.stderr).toBe(0);
      expect(undone.stdout).toContain('disconnected OpenClaw');
      expect(openclaw.take()).toEqual(['plugins list', 'plugins uninstall', 'config patch']);
      expect(await ctxbusPlugin()).toBeUndefined();
      expect(readFileSync(machine.openclaw.configPath)).toEqual(original);
    },
  );
});
