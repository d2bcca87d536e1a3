import { registerHooks } from 'node:module';

// Support for the measurement scripts beside it, which run by hand with Node (type stripping),
// outside the test suite. The package's sources import each other as `./x.js` (what tsup and
// tsc expect); this resolves such a specifier to the `.ts` file when no `.js` exists, so the
// scripts run the sources as they are, without a build.

let registered = false;

export function resolveSourceImports(): void {
  if (registered) return;
  registered = true;
  registerHooks({
    resolve(specifier, context, next) {
      try {
        return next(specifier, context);
      } catch (error) {
        if (specifier.startsWith('.') && specifier.endsWith('.js')) {
          return next(`${specifier.slice(0, -3)}.ts`, context);
        }
        throw error;
      }
    },
  });
}

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

// A closed stdout (`| head`) must not end the script before it drops its scratch schema.
process.stdout.on('error', () => {});

/** One line of a measurement report, on stdout. */
export function report(line: string): void {
  process.stdout.write(`${line}\n`);
}
