import { describe, expect, it } from 'vitest';
import { bytesToVector, dotProduct, normalizeVector, vectorToBytes } from './vector-math.js';

describe('vector math', () => {
  it('normalises to unit length and refuses vectors with no direction', () => {
    const unit = normalizeVector([3, 4]);
    expect(Array.from(unit ?? [])).toEqual([0.6000000238418579, 0.800000011920929]);
    expect(dotProduct(unit as Float32Array, unit as Float32Array)).toBeCloseTo(1, 6);
    expect(normalizeVector([0, 0, 0])).toBeNull();
    expect(normalizeVector([Number.NaN, 1])).toBeNull();
    expect(normalizeVector([])).toBeNull();
  });

  it('round-trips through bytes, aligned or not', () => {
    const vector = new Float32Array([0.25, -1.5, 3e-8, 12345.678]);
    const bytes = vectorToBytes(vector);
    expect(bytes.byteLength).toBe(16);
    expect(Array.from(bytesToVector(bytes))).toEqual(Array.from(vector));
    const shifted = new Uint8Array(17);
    shifted.set(bytes, 1);
    expect(Array.from(bytesToVector(shifted.subarray(1)))).toEqual(Array.from(vector));
  });

  it('gives the cosine of unit vectors', () => {
    const a = normalizeVector([1, 0]) as Float32Array;
    const b = normalizeVector([1, 1]) as Float32Array;
    expect(dotProduct(a, b)).toBeCloseTo(Math.SQRT1_2, 6);
  });
});
