import { removeDir, spawnCli, tempDir, waitUntil } from '@ctxbus/test-kit';
import { afterAll, describe, expect, it } from 'vitest';

// What a first `ctxbus serve` tells the person to do next: connect to this hub. The first hub
// saved on a machine is the default a bare `ctxbus connect` goes to; a second one is not, so
// its next step names its URL.

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});

async function firstStart(configDir: string) {
  const dataDir = tempDir('ctxbus-next-step-data-');
  dirs.push(dataDir);
  const run = spawnCli(['serve', '--port', '0', '--data', dataDir], {
    env: { CTXBUS_CONFIG_DIR: configDir },
  });
  let out = '';
  run.child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  await waitUntil(() => out.includes('next: '), 'serve to print its next step');
  const url = /hub listening on (http:\/\/\S+)/.exec(out)?.[1] ?? '';
  const next = out.split('\n').find((line) => line.startsWith('next: ')) ?? '';
  return { url, next, run };
}

describe('ctxbus serve, first start', () => {
  it('names its URL in the next step when it is not the saved default hub', async () => {
    const configDir = tempDir('ctxbus-next-step-config-');
    dirs.push(configDir);
    const first = await firstStart(configDir);
    const second = await firstStart(configDir);
    try {
      expect(first.next).toMatch(/^next: ctxbus connect \(wires every runtime found here\)/);
      expect(second.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(second.next).toContain(`next: ctxbus connect --url ${second.url} (wires`);
    } finally {
      for (const started of [first, second]) {
        started.run.child.kill('SIGTERM');
        await started.run.done;
      }
    }
  });
});
