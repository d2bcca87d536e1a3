import { testConfig } from '../../vitest.base.ts';

// Each file in a fresh module graph (vitest's default): with one graph per worker, the Supabase
// transport's test (supabase-js, its Realtime socket, a replication slot) once hung in a CI run,
// no timeout firing, after this package's other files had run in its worker; it never did
// alone. The saving here was small (5.7 -> 4.3 s of CPU).
export default testConfig({ isolate: true });
