import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

// @ctxbus/adapter-web runs in browsers: neither its bundle nor anything it loads may be Node's.
const dist = fileURLToPath(new URL('../dist/', import.meta.url));

describe('@ctxbus/adapter-web bundle', () => {
  it('its own files import no Node builtin and use no Buffer or process', () => {
    const files = readdirSync(dist).filter((name) => name.endsWith('.js'));
    expect(files).toContain('index.js');
    expect(files).toContain('supabase.js');
    for (const file of files) {
      const code = readFileSync(`${dist}${file}`, 'utf8');
      const imports = [...code.matchAll(/from\s+['"]([^'"]+)['"]|import\(['"]([^'"]+)['"]\)/g)].map(
        (match) => match[1] ?? match[2] ?? '',
      );
      expect(imports.length).toBeGreaterThan(0);
      expect(
        imports.filter((name) => name.startsWith('node:') || builtinModules.includes(name)),
      ).toEqual([]);
      expect(code).not.toMatch(/\bBuffer\b|\bprocess\.|\brequire\(/);
    }
  });

  it('the Supabase entry bundles for the browser too, and the main entry never loads supabase-js', async () => {
    const bundle = (entry: string) =>
      build({
        entryPoints: [`${dist}${entry}`],
        bundle: true,
        platform: 'browser',
        format: 'esm',
        write: false,
        logLevel: 'silent',
        metafile: true,
      });
    const supabase = await bundle('supabase.js');
    expect(supabase.errors).toEqual([]);
    const transport = supabase.outputFiles[0]?.text ?? '';
    expect(transport).not.toMatch(/from\s*['"]node:/);
    expect(transport).toContain('postgres_changes');
    // supabase-js is the page's (passed in, never imported); the main entry has no transport.
    expect(
      Object.keys(supabase.metafile.inputs).filter((input) => input.includes('@supabase')),
    ).toEqual([]);
    const main = await bundle('index.js');
    expect(main.outputFiles[0]?.text ?? '').not.toContain('postgres_changes');
  });

  it('bundles for the browser with every dependency inlined (esbuild fails on a builtin)', async () => {
    const result = await build({
      entryPoints: [`${dist}index.js`],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent',
      metafile: true,
    });
    expect(result.errors).toEqual([]);
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.some((input) => input.includes('eventsource-parser'))).toBe(true);
    expect(inputs.some((input) => input.includes('core/dist'))).toBe(true);
    // The tokenizer stays out: the contract entry does not load it.
    expect(inputs.filter((input) => input.includes('gpt-tokenizer'))).toEqual([]);
    const code = result.outputFiles[0]?.text ?? '';
    expect(code).not.toMatch(/from\s*['"]node:/);
  });
});
