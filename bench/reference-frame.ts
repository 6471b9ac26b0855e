/**
 * A reference voice frame: what one voice packet's encryption costs this machine, now. The two cores a bench runs on
 * are a virtual machine's, and their speed moves: the same commit's CPU per stream-second has read 40 % apart an hour
 * apart. So `npm run bench` times this fixed piece of work at its start and at its end, and results from different
 * hosts or hours can be read against it. The frame is what a bot in voice does 50 times a second per server and no
 * change in Herald can make cheaper: DAVE's end-to-end encryption through davey (`DAVESession.encryptOpus`, in a real
 * two-member group) and the transport's XChaCha20-Poly1305 through sodium-native over the result.
 */
import Davey from '@snazzah/davey';
import sodium from 'sodium-native';
import { createExternalSender, externalProposal, vector } from '../emulators/discord/dave-mls.ts';
import { cpuMicrosPerCall } from './cpu-time.ts';

const CHANNEL = '1300000000000000001';
/** The bot's user id in {@link daveGroup}: a member decrypts its frames as from this sender. */
export const BOT = '1100000000000000001';
const MEMBER = '1200000000000000001';
// davey's enums are ambient const enums, which this project's TypeScript settings cannot read: their values.
const APPEND = 0 as Davey.ProposalsOperationType;

/** A two-member DAVE group: the bot (which encrypts) and a member (which decrypts). */
export function daveGroup(): {
  bot: InstanceType<typeof Davey.DAVESession>;
  member: InstanceType<typeof Davey.DAVESession>;
} {
  const sender = createExternalSender();
  const bot = new Davey.DAVESession(Davey.DAVE_PROTOCOL_VERSION, BOT, CHANNEL);
  const member = new Davey.DAVESession(Davey.DAVE_PROTOCOL_VERSION, MEMBER, CHANNEL);
  bot.setExternalSender(sender.package);
  member.setExternalSender(sender.package);
  const add = externalProposal(sender, CHANNEL, 0n, { add: member.getSerializedKeyPackage() });
  const { commit, welcome } = bot.processProposals(APPEND, vector(add.message), [BOT, MEMBER]);
  if (!commit || !welcome) throw new Error('the bot did not commit the Add proposal');
  bot.processCommit(commit);
  member.processWelcome(welcome);
  if (!bot.ready || !member.ready) throw new Error('the DAVE group is not ready');
  return { bot, member };
}

/** An Opus-looking frame of `bytes` (TOC byte of a 20 ms CELT frame), never the silence frame davey passes through. */
export function opusLikeFrame(bytes = 120): Buffer {
  const frame = Buffer.alloc(bytes, 0x5a);
  frame[0] = 0x78;
  return frame;
}

/**
 * CPU µs (user + system, GC included) per reference frame: the median of `rounds` rounds of `calls` frames
 * ({@link cpuMicrosPerCall}). About 0.1 s of one core with the defaults.
 */
export function referenceFrameUs(o: { calls?: number; rounds?: number } = {}): number {
  const { bot } = daveGroup();
  const frame = opusLikeFrame();
  const key = Buffer.alloc(32, 7);
  const nonce = Buffer.alloc(24);
  const header = Buffer.alloc(12, 1);
  return cpuMicrosPerCall(
    () => {
      const sealed = bot.encryptOpus(frame);
      const out = Buffer.allocUnsafe(sealed.length + sodium.crypto_aead_xchacha20poly1305_ietf_ABYTES);
      sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(out, sealed, header, null, nonce, key);
    },
    { calls: o.calls ?? 5_000, rounds: o.rounds ?? 5 },
  );
}
