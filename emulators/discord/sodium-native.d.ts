/** The part of sodium-native (which ships no types) that the Discord emulator and its tests use. */
declare module 'sodium-native' {
  /** Tag length of XChaCha20-Poly1305: 16 bytes, after the ciphertext in the combined form. */
  export const crypto_aead_xchacha20poly1305_ietf_ABYTES: number;
  /** Seals `m` into `c` (ciphertext || tag, `m.length + ABYTES` bytes); returns the bytes written. */
  export function crypto_aead_xchacha20poly1305_ietf_encrypt(
    c: Uint8Array,
    m: Uint8Array,
    ad: Uint8Array | null,
    nsec: null,
    npub: Uint8Array,
    k: Uint8Array,
  ): number;
  /** Opens `c` (ciphertext || tag) into `m`; returns the bytes written. @throws when `c` or `ad` was altered. */
  export function crypto_aead_xchacha20poly1305_ietf_decrypt(
    m: Uint8Array,
    nsec: null,
    c: Uint8Array,
    ad: Uint8Array | null,
    npub: Uint8Array,
    k: Uint8Array,
  ): number;
}
