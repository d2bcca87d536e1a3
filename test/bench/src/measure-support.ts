// Support for the store-level measurement scripts (measure-*.ts), which run by hand with Node
// against the built packages, outside the test suite and `./dev bench`.

// A closed stdout (`| head`) must not end the script before it drops its scratch schema.
process.stdout.on('error', () => {});

/** One line of a measurement report, on stdout. */
export function report(line: string): void {
  process.stdout.write(`${line}\n`);
}
