// Vectors as the stores keep them: float32, unit length, so a dot product is the cosine.
// Stored as little-endian bytes (SQLite BLOB) or real[] (PostgreSQL).

/** `vector` scaled to unit length; null when it has no direction (all zeros, NaN). */
export function normalizeVector(vector: ArrayLike<number>): Float32Array | null {
  let sum = 0;
  for (let index = 0; index < vector.length; index++) {
    const value = vector[index] as number;
    sum += value * value;
  }
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) return null;
  const unit = new Float32Array(vector.length);
  for (let index = 0; index < vector.length; index++)
    unit[index] = (vector[index] as number) / norm;
  return unit;
}

const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The vector's bytes, little-endian float32. */
export function vectorToBytes(vector: Float32Array): Uint8Array {
  if (littleEndian) return new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength);
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (let index = 0; index < vector.length; index++)
    view.setFloat32(index * 4, vector[index] as number, true);
  return bytes;
}

/** A vector from little-endian float32 bytes (a view when aligned, else a copy). */
export function bytesToVector(bytes: Uint8Array): Float32Array {
  const length = bytes.byteLength >> 2;
  if (littleEndian && bytes.byteOffset % 4 === 0)
    return new Float32Array(bytes.buffer, bytes.byteOffset, length);
  const vector = new Float32Array(length);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let index = 0; index < length; index++) vector[index] = view.getFloat32(index * 4, true);
  return vector;
}

/** Dot product of two vectors of one length (the cosine when both are unit vectors). */
export function dotProduct(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let index = 0; index < a.length; index++) sum += (a[index] as number) * (b[index] as number);
  return sum;
}
