import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { canonicalJson } from './canonical-json.js';

/** Hex SHA-256 of a string (UTF-8). */
export function sha256Hex(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** Hex SHA-256 of the canonical JSON of a value. */
export function hashValue(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
