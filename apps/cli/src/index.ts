export { createProgram, runCli } from './cli.js';
export { defaultDataDir } from './data-dir.js';
export { EXIT } from './output.js';
