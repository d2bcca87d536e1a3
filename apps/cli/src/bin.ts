// The `ctxbus` command's entry. It imports nothing of ctxbus until it knows the Node.js is new
// enough (an old Node gets one line saying what to do, not a syntax or import crash), and it
// answers `--version` from package.json alone (no hub, store or tokenizer loaded).
import { readFileSync } from 'node:fs';
import nodeModule from 'node:module';

const MIN_MAJOR = 22;
const MIN_MINOR = 13;
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);

if (major < MIN_MAJOR || (major === MIN_MAJOR && minor < MIN_MINOR)) {
  process.stderr.write(
    `ctxbus: error: needs Node.js ${MIN_MAJOR}.${MIN_MINOR} or later, and this is Node.js ${process.version} (${process.execPath}); install Node.js 24 (https://nodejs.org, or: nvm install 24) and run ctxbus with it\n`,
  );
  process.exit(1);
}

const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) {
  const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`${version}\n`);
} else {
  // V8's on-disk code cache (in the OS temp directory; NODE_DISABLE_COMPILE_CACHE=1 turns it
  // off): from the second run on, ctxbus and the hub skip compiling the modules they load.
  nodeModule.enableCompileCache?.();
  await import('./main.js');
}
