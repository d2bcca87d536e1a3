import { defineConfig } from 'tsup';
import { library } from '../../tsup.base.ts';

// A browser library: platform neutral, and a test bundles it for the browser to prove that
// nothing it loads is a Node builtin.
export default defineConfig(library(['src/index.ts', 'src/supabase.ts'], 'neutral'));
