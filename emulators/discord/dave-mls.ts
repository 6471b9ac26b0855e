/**
 * The few MLS (RFC 9420) byte layouts a DAVE voice gateway needs: it never holds group secrets, it only signs
 * external proposals and reads (never decrypts) commits. Layouts and traps: /work/shared/dave-facts.md §4.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';

/** The gateway's MLS external sender: its P-256 signing key and the op 25 package that announces it. */
export interface ExternalSender {
  readonly privateKey: KeyObject;
  /** `signature_key<V> ‖ u16 credential_type=1 ‖ identity<V>`, the op 25 payload. */
  readonly package: Buffer;
}

/** One proposal as the gateway sends it (op 27), with the reference a commit will cite it by. */
export interface ExternalProposal {
  readonly message: Buffer;
  readonly ref: Buffer;
}

/** What the gateway reads out of an op 28 payload. */
export interface ParsedCommit {
  /** The MLSMessage(commit), relayed verbatim in op 29. */
  readonly commit: Buffer;
  /** The bare Welcome that follows a commit adding members, if any. */
  readonly welcome: Buffer | undefined;
  readonly epoch: bigint;
  /** The proposal references the commit cites, in order. */
  readonly refs: readonly Buffer[];
}

const MLS_10 = 1;
const WIRE_PUBLIC = 1;
const SENDER_MEMBER = 1;
const SENDER_EXTERNAL = 2;
const CONTENT_PROPOSAL = 2;
const CONTENT_COMMIT = 3;
const PROPOSAL_ADD = 1;
const PROPOSAL_REMOVE = 3;
const BY_REFERENCE = 2;
const CREDENTIAL_BASIC = 1;

/** RFC 9420 §2.1.2 variable-length integer (the `<V>` prefix of vectors). */
export function varint(n: number): Buffer {
  if (n < 0x40) return Buffer.from([n]);
  if (n < 0x4000) return Buffer.from([0x40 | (n >> 8), n & 0xff]);
  const b = Buffer.alloc(4);
  b.writeUInt32BE((0x80000000 | n) >>> 0);
  return b;
}

/** `bytes<V>`: a vector with its varint length. */
export function vector(bytes: Buffer): Buffer {
  return Buffer.concat([varint(bytes.length), bytes]);
}

const u16 = (n: number): Buffer => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const u64 = (n: bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(n);
  return b;
};

/** A new external sender with a fresh key; identity is the single byte 0, as in Discord's captured package. */
export function createExternalSender(): ExternalSender {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  const point = Buffer.concat([
    Buffer.from([4]),
    Buffer.from(String(jwk.x), 'base64url'),
    Buffer.from(String(jwk.y), 'base64url'),
  ]);
  return {
    privateKey,
    package: Buffer.concat([vector(point), u16(CREDENTIAL_BASIC), vector(Buffer.from([0]))]),
  };
}

/** `RefHash(label, value)` of RFC 9420 §5.2. */
function refHash(label: string, value: Buffer): Buffer {
  return createHash('sha256')
    .update(Buffer.concat([vector(Buffer.from(label)), vector(value)]))
    .digest();
}

/** The KeyPackageRef of a bare KeyPackage (a Welcome's `new_member` equals it). */
export function keyPackageRef(keyPackage: Buffer): Buffer {
  return refHash('MLS 1.0 KeyPackage Reference', keyPackage);
}

/** A signed external Add or Remove proposal for the group `channelId` at `epoch`. */
export function externalProposal(
  sender: ExternalSender,
  channelId: string,
  epoch: bigint,
  proposal: { add: Buffer } | { remove: number },
): ExternalProposal {
  const body =
    'add' in proposal
      ? Buffer.concat([u16(PROPOSAL_ADD), proposal.add])
      : Buffer.concat([u16(PROPOSAL_REMOVE), u32(proposal.remove)]);
  const content = Buffer.concat([
    vector(u64(BigInt(channelId))),
    u64(epoch),
    Buffer.from([SENDER_EXTERNAL]),
    u32(0),
    vector(Buffer.alloc(0)),
    Buffer.from([CONTENT_PROPOSAL]),
    body,
  ]);
  // FramedContentTBS of an external sender carries no GroupContext.
  const tbs = Buffer.concat([u16(MLS_10), u16(WIRE_PUBLIC), content]);
  const signContent = Buffer.concat([vector(Buffer.from('MLS 1.0 FramedContentTBS')), vector(tbs)]);
  const signature = sign('sha256', signContent, sender.privateKey);
  const message = Buffer.concat([u16(MLS_10), u16(WIRE_PUBLIC), content, vector(signature)]);
  return { message, ref: refHash('MLS 1.0 Proposal Reference', message.subarray(2)) };
}

/** A forward-only reader over MLS bytes; every read throws a RangeError past the end. */
class Reader {
  offset = 0;
  readonly bytes: Buffer;
  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }
  u8(): number {
    const v = this.bytes.readUInt8(this.offset);
    this.offset += 1;
    return v;
  }
  u16(): number {
    const v = this.bytes.readUInt16BE(this.offset);
    this.offset += 2;
    return v;
  }
  u64(): bigint {
    const v = this.bytes.readBigUInt64BE(this.offset);
    this.offset += 8;
    return v;
  }
  skip(n: number): void {
    if (this.offset + n > this.bytes.length) throw new RangeError('MLS message truncated');
    this.offset += n;
  }
  length(): number {
    const first = this.u8();
    const prefix = first >> 6;
    if (prefix === 0) return first;
    if (prefix === 1) return ((first & 0x3f) << 8) | this.u8();
    if (prefix === 2)
      return (((first & 0x3f) << 24) | (this.u8() << 16) | (this.u8() << 8) | this.u8()) >>> 0;
    throw new RangeError('invalid MLS varint');
  }
  vector(): Buffer {
    const n = this.length();
    const start = this.offset;
    this.skip(n);
    return this.bytes.subarray(start, start + n);
  }
}

/** Skips a LeafNode (inside an UpdatePath). */
function skipLeafNode(r: Reader): void {
  r.vector(); // encryption_key
  r.vector(); // signature_key
  r.u16(); // credential_type (basic)
  r.vector(); // identity
  for (let i = 0; i < 5; i += 1) r.vector(); // capabilities
  const source = r.u8();
  if (source === 1)
    r.skip(16); // lifetime
  else if (source === 3) r.vector(); // parent_hash
  r.vector(); // extensions
  r.vector(); // signature
}

/**
 * Splits an op 28 payload into the commit and the Welcome that follows it, reading the epoch and the proposal
 * references on the way. @throws RangeError or Error when the bytes are not a member's PublicMessage commit.
 */
export function parseCommitWelcome(payload: Buffer): ParsedCommit {
  const r = new Reader(payload);
  if (r.u16() !== MLS_10 || r.u16() !== WIRE_PUBLIC) throw new Error('not an MLS 1.0 PublicMessage');
  r.vector(); // group_id
  const epoch = r.u64();
  if (r.u8() !== SENDER_MEMBER) throw new Error('commit not sent by a member');
  r.skip(4); // leaf index
  r.vector(); // authenticated_data
  if (r.u8() !== CONTENT_COMMIT) throw new Error('not a commit');
  const proposals = new Reader(r.vector());
  const refs: Buffer[] = [];
  while (proposals.offset < proposals.bytes.length) {
    if (proposals.u8() !== BY_REFERENCE) throw new Error('commit carries a proposal by value');
    refs.push(proposals.vector());
  }
  if (r.u8() === 1) {
    skipLeafNode(r);
    r.vector(); // nodes
  }
  r.vector(); // signature
  r.vector(); // confirmation_tag
  r.vector(); // membership_tag
  const welcome = r.offset < payload.length ? payload.subarray(r.offset) : undefined;
  return { commit: payload.subarray(0, r.offset), welcome, epoch, refs };
}
