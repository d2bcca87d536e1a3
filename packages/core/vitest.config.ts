import { testConfig } from '../../vitest.base.ts';

// Core's tests share no state through its modules (pure functions: no timers, globals, env or
// mocks), so one module graph per worker serves every file: importing core and the o200k
// tokenizer once per file cost two thirds of its test CPU (24 s -> 8 s, the same 134 tests).
export default testConfig({ isolate: false });
