/** The soak's servers: a text channel read aloud, two voice channels, an admin and two members each. */
import { PermissionFlagsBits } from 'discord.js';
import type { Channel, DiscordEmulator, Guild, Member } from '../emulators/discord/index.ts';
import type { Random } from './prng.ts';

/** One server of the soak and who sits where. */
export interface SoakServer {
  readonly index: number;
  readonly guild: Guild;
  readonly text: Channel;
  readonly lounge: Channel;
  readonly stage: Channel;
  readonly admin: Member;
  readonly members: readonly Member[];
  /** A command of this server awaits its answer: commands of one server go one at a time, as the queue's order
   *  is then the order of the answers. */
  busy: boolean;
  /** Which of the /speak voices this server uses next. */
  toneTurn: number;
  /** A member in Herald's voice channel (or any voice channel when Herald is in none). */
  inVoiceMember(random: Random): Member | undefined;
  /** Someone joins, leaves or changes voice channel; returns 1. Counts a DAVE re-key when Herald's call changed. */
  moveSomeone(random: Random, count: (kind: 'dave-rekey') => void): number;
  /** Puts `member` in `channel` (or out of voice). */
  place(member: Member, channel: Channel | null): void;
}

/** Creates `n` servers in the emulator. */
export function createSoakServers(discord: DiscordEmulator, n: number): SoakServer[] {
  return Array.from({ length: n }, (_, index) => {
    const guild = discord.createGuild({ name: `Soak ${index}` });
    const text = guild.addTextChannel('general');
    const lounge = guild.addVoiceChannel('Lounge');
    const stage = guild.addVoiceChannel('Stage');
    const admin = guild.addMember({ name: `Admin ${index}`, permissions: PermissionFlagsBits.ManageGuild });
    const members = [
      admin,
      guild.addMember({ name: `Bob ${index}` }),
      guild.addMember({ name: `Cleo ${index}` }),
    ];
    const where = new Map<string, Channel | null>(members.map((member) => [member.id, null]));
    const place = (member: Member, channel: Channel | null): void => {
      if ((where.get(member.id) ?? null) === channel) return;
      if (channel) guild.joinVoice(member, channel);
      else guild.leaveVoice(member);
      where.set(member.id, channel);
    };
    place(admin, lounge);
    place(members[1] as Member, lounge);
    const server: SoakServer = {
      index,
      guild,
      text,
      lounge,
      stage,
      admin,
      members,
      busy: false,
      toneTurn: 0,
      place,
      inVoiceMember(random) {
        const herald = guild.botVoiceChannelId();
        const present = members.filter((member) => {
          const channel = where.get(member.id);
          return channel && (herald === null || channel.id === herald);
        });
        return present.length > 0 ? random.pick(present) : undefined;
      },
      moveSomeone(random, count) {
        const member = random.pick(members);
        const from = where.get(member.id) ?? null;
        const inVoice = members.filter((m) => where.get(m.id)).length;
        // Mostly keep someone listening: leaving is likelier when the channel is busy.
        const to =
          from === null
            ? random.chance(0.8)
              ? lounge
              : stage
            : random.chance(inVoice > 1 ? 0.6 : 0.2)
              ? null
              : from;
        const herald = guild.botVoiceChannelId();
        place(member, to);
        if (herald !== null && (from?.id === herald || to?.id === herald) && from !== to) count('dave-rekey');
        return 1;
      },
    };
    return server;
  });
}
