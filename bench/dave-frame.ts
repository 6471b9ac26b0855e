/**
 * What one voice frame costs to encrypt, layer by layer, on this machine: DAVE's end-to-end encryption through
 * davey (`DAVESession.encryptOpus`, what @discordjs/voice calls for every frame once the group is ready), a member's
 * DAVE decryption of it, and the transport's XChaCha20-Poly1305 through sodium-native (patch 004). A bot in voice
 * runs the first and the last 50 times a second for every server it speaks in, so their sum is a floor under its
 * CPU per stream-second that no change in Herald can lower.
 *
 * The group is real: the bot's session creates it from a signed external Add proposal (the emulated voice gateway's
 * bytes, emulators/discord/dave-mls.ts), commits, and the member joins by the Welcome. Each figure is CPU time per
 * call (user + system, GC included) over a long loop, the median of several rounds; then the bot's encryption spread
 * over 1–600 groups in turn, as in 600 servers at once, and over 250 groups paced as a bot's 20 ms audio cycle against
 * back to back. Run: `npm run bench:dave-frame`;
 * prints a table and writes bench/results/dave-frame-<date>-<commit>.json.
 */
import type Davey from '@snazzah/davey';
import sodium from 'sodium-native';
import { cpuMicrosPerCall, cpuMsSince, median } from './cpu-time.ts';
import { BOT, daveGroup as group, opusLikeFrame } from './reference-frame.ts';
import { machineOf, writeResult } from './result-file.ts';
import { createAudioPacket, type PacketConnection, unpatchedPacket } from './voice-packet.ts';

const SIZES = [40, 80, 120, 160, 320, 1_000] as const;
const CALLS = Number(process.env.CALLS ?? 50_000);
const ROUNDS = 5;
// davey's enums are ambient const enums, which this project's TypeScript settings cannot read: its value.
const AUDIO = 0 as Davey.MediaType;

/** {@link cpuMicrosPerCall} at this benchmark's {@link CALLS} and {@link ROUNDS}. */
const microsPerCall = (work: (call: number) => unknown, prepare?: () => void): number =>
  cpuMicrosPerCall(work, { calls: CALLS, rounds: ROUNDS, ...(prepare ? { prepare } : {}) });

interface SizeResult {
  readonly bytes: number;
  /** `DAVESession.encryptOpus`, as the bot calls it for every frame. */
  readonly daveEncryptUs: number;
  /** `DAVESession.decrypt`, as each member's client does for every frame it hears. */
  readonly daveDecryptUs: number;
  /** The transport layer over the DAVE frame: XChaCha20-Poly1305 with a 12-byte RTP header as additional data. */
  readonly transportEncryptUs: number;
}

/**
 * The whole packet as @discordjs/voice builds it for each frame, `Networking.createAudioPacket` (patched, 007: one
 * buffer, the ciphertext written in place), beside the unpatched library's recipe (the same DAVE frame, the ciphertext
 * in a buffer of its own, then Buffer.concat of header, ciphertext and nonce), in alternate rounds, a frame for each
 * of {@link PACKET_GROUPS} groups in turn. DAVE's share is the same in both; what differs is the assembly.
 */
const PACKET_GROUPS = 300;
const PACKET_BYTES = 120;
const packetGroups = Array.from({ length: PACKET_GROUPS }, (_, i) => {
  const session = group().bot;
  return {
    // What the library's DAVESession.encrypt does once its group is ready.
    dave: { encrypt: (frame: Buffer) => session.encryptOpus(frame) },
    frame: opusLikeFrame(PACKET_BYTES),
    data: {
      encryptionMode: 'aead_xchacha20_poly1305_rtpsize',
      secretKey: new Uint8Array(Buffer.alloc(32, i)),
      nonce: 0,
      nonceBuffer: Buffer.alloc(24),
      sequence: i,
      timestamp: i * 960,
      ssrc: 1000 + i,
    } as PacketConnection,
  };
});
// @discordjs/voice loads sodium-native asynchronously on import; until then its packets throw.
for (let tries = 0; ; tries++) {
  try {
    const probe = packetGroups[0];
    if (probe) createAudioPacket(probe.frame, { ...probe.data, nonceBuffer: Buffer.alloc(24) }, probe.dave);
    break;
  } catch (error) {
    if (tries > 100) throw error;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
const packetRounds = { library: [] as number[], unpatched: [] as number[] };
for (let round = 0; round < ROUNDS * 2; round++) {
  // Alternately first, so that neither always meets the garbage the other left.
  const order = round % 2 === 0 ? (['library', 'unpatched'] as const) : (['unpatched', 'library'] as const);
  for (const name of order) {
    const before = process.cpuUsage();
    for (let call = 0; call < CALLS; call++) {
      const g = packetGroups[call % PACKET_GROUPS];
      if (!g) continue;
      if (name === 'library') createAudioPacket(g.frame, g.data, g.dave);
      else unpatchedPacket(g.frame, g.data, g.dave);
    }
    packetRounds[name].push((cpuMsSince(before) * 1000) / CALLS);
  }
}
const packet = {
  groups: PACKET_GROUPS,
  bytes: PACKET_BYTES,
  libraryUs: median(packetRounds.library, 2),
  unpatchedUs: median(packetRounds.unpatched, 2),
};

const { bot, member } = group();
const key = Buffer.alloc(32, 7);
const nonce = Buffer.alloc(24);
const header = Buffer.alloc(12, 1);
const results: SizeResult[] = SIZES.map((bytes) => {
  const frame = opusLikeFrame(bytes);
  const sealed = bot.encryptOpus(frame);
  const opened = member.decrypt(BOT, AUDIO, sealed);
  if (!opened.equals(frame)) throw new Error(`a ${bytes}-byte frame did not survive DAVE`);
  const daveEncryptUs = microsPerCall(() => bot.encryptOpus(frame));
  let heard: Buffer[] = [];
  const daveDecryptUs = microsPerCall(
    (call) => member.decrypt(BOT, AUDIO, heard[call] as Buffer),
    () => {
      heard = Array.from({ length: CALLS }, () => bot.encryptOpus(frame));
    },
  );
  const transportEncryptUs = microsPerCall(() => {
    const out = Buffer.allocUnsafe(sealed.length + sodium.crypto_aead_xchacha20poly1305_ietf_ABYTES);
    sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(out, sealed, header, null, nonce, key);
    return out;
  });
  return { bytes, daveEncryptUs, daveDecryptUs, transportEncryptUs };
});

/**
 * The same encryption spread over many groups, a frame each in turn, as a bot speaking in that many servers calls it:
 * whether the sessions' state falling out of the CPU's caches is what makes a frame dearer in place.
 */
const SESSION_COUNTS = [1, 30, 300, 600] as const;
const SPREAD_BYTES = 120;
const spread = SESSION_COUNTS.map((sessions) => {
  const bots = Array.from({ length: sessions }, () => group().bot);
  const frames = bots.map(() => opusLikeFrame(SPREAD_BYTES));
  const daveEncryptUs = microsPerCall((call) =>
    bots[call % sessions]?.encryptOpus(frames[call % sessions] as Buffer),
  );
  return { sessions, bytes: SPREAD_BYTES, daveEncryptUs };
});

/**
 * The same frames in the rhythm of a bot's audio cycle: a frame for each of {@link PACED_GROUPS} groups, then the
 * rest of the 20 ms idle (the event loop waits for the next cycle, and other processes, or another guest of the
 * host, run on the core), against the same calls back to back, in alternate rounds. In place, what a cycle needs
 * has left the caches by the next one; a back-to-back loop keeps it warm, and reads cheaper than a bot can be.
 */
const PACED_GROUPS = 250;
const PACED_CYCLES = Math.max(20, Math.round(CALLS / PACED_GROUPS / 2));
const pacedBots = Array.from({ length: PACED_GROUPS }, () => group().bot);
const pacedFrames = pacedBots.map(() => opusLikeFrame(SPREAD_BYTES));
const pacedRounds = { paced: [] as number[], backToBack: [] as number[] };
for (let round = 0; round < ROUNDS * 2; round++) {
  const paced = round % 2 === 0;
  let cpuMs = 0;
  for (let cycle = 0; cycle < PACED_CYCLES; cycle++) {
    const before = process.cpuUsage();
    for (let i = 0; i < PACED_GROUPS; i++) pacedBots[i]?.encryptOpus(pacedFrames[i] as Buffer);
    cpuMs += cpuMsSince(before);
    if (paced) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  (paced ? pacedRounds.paced : pacedRounds.backToBack).push((cpuMs * 1000) / (PACED_CYCLES * PACED_GROUPS));
}
const pacedCycle = {
  groups: PACED_GROUPS,
  cycles: PACED_CYCLES,
  bytes: SPREAD_BYTES,
  pacedUs: median(pacedRounds.paced, 2),
  backToBackUs: median(pacedRounds.backToBack, 2),
};

const machine = machineOf();
const startedAt = new Date().toISOString();
console.log(`${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, commit ${machine.commit}`);
console.log(`CPU µs per frame (median of ${ROUNDS} rounds of ${CALLS.toLocaleString('en')} calls)`);
console.log('bytes    DAVE encrypt   DAVE decrypt   transport encrypt   bot per stream-second');
for (const r of results) {
  // 50 frames a second: DAVE and the transport, each frame, for one stream.
  const perStreamSecondMs = ((r.daveEncryptUs + r.transportEncryptUs) * 50) / 1000;
  console.log(
    `${String(r.bytes).padEnd(9)}${`${r.daveEncryptUs} µs`.padEnd(15)}${`${r.daveDecryptUs} µs`.padEnd(15)}${`${r.transportEncryptUs} µs`.padEnd(20)}${perStreamSecondMs.toFixed(3)} ms`,
  );
}
console.log(`DAVE encrypt of a ${SPREAD_BYTES}-byte frame, one group after another`);
for (const r of spread) console.log(`${String(r.sessions).padEnd(5)} groups  ${r.daveEncryptUs} µs`);
console.log(
  `DAVE encrypt, ${PACED_GROUPS} groups a frame each, ${pacedCycle.cycles} cycles: paced 20 ms apart as a bot's audio cycle ${pacedCycle.pacedUs} µs, back to back ${pacedCycle.backToBackUs} µs`,
);
console.log(
  `The whole packet (DAVE, transport, RTP header; ${PACKET_BYTES}-byte frames, ${PACKET_GROUPS} groups in turn, alternate rounds)`,
);
console.log(`@discordjs/voice createAudioPacket (patch 007: one buffer)  ${packet.libraryUs} µs`);
console.log(`the unpatched recipe (a buffer each, then Buffer.concat)     ${packet.unpatchedUs} µs`);
const file = writeResult('dave-frame', startedAt, machine, {
  calls: CALLS,
  rounds: ROUNDS,
  results,
  spread,
  pacedCycle,
  packet,
});
console.log(`written to ${file}`);
