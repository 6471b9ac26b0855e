/**
 * The sandbox's small Discord server and what the page shows of it: channels, members, and one timeline per
 * text channel (members' messages, slash commands with Herald's answers, Herald's own posts).
 */
import { PermissionFlagsBits } from 'discord.js';
import {
  type Channel,
  type DiscordEmulator,
  type Guild,
  IS_VOICE_MESSAGE,
  type Json,
  type Member,
  type Reply,
  type SentMessage,
} from '../emulators/discord/index.ts';
import { DEFAULT_BOT_PERMISSIONS } from '../emulators/discord/model.ts';

/** The server every sandbox starts with. */
export interface SandboxGuild {
  readonly guild: Guild;
  /** The channel Herald reads aloud from the start. */
  readonly general: Channel;
  readonly textChannels: readonly Channel[];
  /** The Lounge and Gaming voice channels, and the Town Hall stage. */
  readonly voiceChannels: readonly Channel[];
  /** Ada (Manage Server, the operator), Bob (a plain member), Cleo (not in voice). */
  readonly members: readonly (Member & { readonly role: 'admin' | 'member' })[];
  readonly admin: Member;
}

/**
 * Builds the sandbox server: #general and #random, the Lounge and Gaming voice channels, the Town Hall stage (where
 * Herald is no stage moderator: it asks to speak), three members.
 */
export function createSandboxGuild(discord: DiscordEmulator): SandboxGuild {
  const guild = discord.createGuild({ name: 'Herald Sandbox' });
  const general = guild.addTextChannel('general');
  const textChannels = [general, guild.addTextChannel('random')];
  const lounge = guild.addVoiceChannel('Lounge');
  const voiceChannels = [lounge, guild.addVoiceChannel('Gaming'), guild.addStageChannel('Town Hall')];
  const admin = guild.addMember({ name: 'Ada Admin', permissions: PermissionFlagsBits.ManageGuild });
  const member = guild.addMember({ name: 'Bob Member' });
  const away = guild.addMember({ name: 'Cleo Away' });
  guild.joinVoice(admin, lounge);
  guild.joinVoice(member, lounge);
  // Invited as the README asks: with Send Voice Messages too, so `/speak voice-message:True` works here, and
  // Request to Speak (which Discord's @everyone has by default), so that on the stage Herald raises its hand.
  guild.setBotPermissions(
    DEFAULT_BOT_PERMISSIONS | PermissionFlagsBits.SendVoiceMessages | PermissionFlagsBits.RequestToSpeak,
  );
  return {
    guild,
    general,
    textChannels,
    voiceChannels,
    admin,
    members: [
      { ...admin, role: 'admin' },
      { ...member, role: 'member' },
      { ...away, role: 'member' },
    ],
  };
}

/** A button as the page draws it. */
export interface PageButton {
  readonly customId: string;
  readonly label: string;
  readonly disabled: boolean;
}

/** One message as the page draws it. */
export interface PageMessage {
  readonly id: string;
  readonly at: number;
  readonly authorId: string;
  readonly content: string;
  readonly embeds: Json[];
  readonly buttons: PageButton[];
  /** Set on ephemeral answers: only this member sees them ("only visible to you"). */
  readonly onlyFor: string | undefined;
  /** The slash command this answers, as typed (`/speak text: hello`), with who ran it. */
  readonly command: { readonly by: string; readonly line: string } | undefined;
  /** Herald has not answered yet (or deferred and is thinking). */
  readonly pending: boolean;
  /** A voice message: its Ogg Opus as a data URL, its length and waveform (0–255 a point), as Discord shows it. */
  readonly voice?: PageVoiceMessage;
}

/** A voice message as the page draws (and plays) it. */
export interface PageVoiceMessage {
  readonly src: string;
  readonly durationSecs: number;
  readonly waveform: readonly number[];
}

/** The voice message a message is, if it is one. */
function voiceOf(message: SentMessage): { voice?: PageVoiceMessage } {
  const file = message.files[0];
  if ((message.flags & IS_VOICE_MESSAGE) === 0 || !file) return {};
  return {
    voice: {
      src: `data:${file.contentType};base64,${file.data.toString('base64')}`,
      durationSecs: file.durationSecs ?? 0,
      waveform: [...Buffer.from(file.waveform ?? '', 'base64')],
    },
  };
}

type Entry =
  | { kind: 'said'; at: number; message: SentMessage; authorId: string }
  | { kind: 'posted'; at: number; messageId: string }
  | {
      kind: 'interaction';
      at: number;
      id: string;
      by: string;
      line: string;
      reply: Reply | undefined;
      /** The latest state of the answer's message after button presses updated it. */
      view: Reply | undefined;
      error: string | undefined;
    };

/** Timelines of the sandbox's text channels, fed by the page's actions and the emulator's records. */
export interface Timelines {
  said(channel: Channel, authorId: string, message: SentMessage): void;
  /** Records a slash command (or a button press answered with a new message) and follows its answer. */
  interaction(channel: Channel, by: string, line: string, answer: Promise<Reply>): void;
  /** A press answered by updating `messageId`'s message in place. */
  updated(messageId: string, reply: Reply): void;
  /** The bot message with this id, to press buttons on. */
  message(messageId: string): SentMessage | undefined;
  /** Everything the page shows, per channel id (Herald's new channel posts included). */
  view(): Record<string, PageMessage[]>;
}

/** Creates the timelines of `channels`. */
export function createTimelines(
  discord: DiscordEmulator,
  channels: readonly Channel[],
  onChange: () => void,
): Timelines {
  const entries = new Map<string, Entry[]>(channels.map((channel) => [channel.id, []]));
  const knownPosts = new Set<string>();
  const botMessages = new Map<string, SentMessage>();
  let nextId = 0;

  const remember = (reply: Reply): void => {
    botMessages.set(reply.message.id, reply.message);
    for (const followUp of reply.followUps()) botMessages.set(followUp.message.id, followUp.message);
  };
  const entriesOf = (channel: Channel): Entry[] => {
    const list = entries.get(channel.id);
    if (!list) throw new Error(`sandbox: no timeline for #${channel.name}`);
    return list;
  };

  const fromReply = (reply: Reply, by: string, at: number, id: string): PageMessage => ({
    id,
    at,
    authorId: discord.botUserId,
    content: reply.content,
    embeds: reply.embeds,
    buttons: buttonsOf(reply.components),
    onlyFor: reply.ephemeral ? by : undefined,
    command: undefined,
    pending: false,
    ...voiceOf(reply.message),
  });

  return {
    said(channel, authorId, message) {
      entriesOf(channel).push({ kind: 'said', at: Date.now(), message, authorId });
      onChange();
    },
    interaction(channel, by, line, answer) {
      const entry: Extract<Entry, { kind: 'interaction' }> = {
        kind: 'interaction',
        at: Date.now(),
        id: `i${nextId++}`,
        by,
        line,
        reply: undefined,
        view: undefined,
        error: undefined,
      };
      entriesOf(channel).push(entry);
      answer.then(
        (reply) => {
          entry.reply = reply;
          remember(reply);
          onChange();
        },
        (error: unknown) => {
          entry.error = error instanceof Error ? error.message : String(error);
          onChange();
        },
      );
      onChange();
    },
    updated(messageId, reply) {
      for (const list of entries.values()) {
        for (const entry of list) {
          if (entry.kind === 'interaction' && entry.reply?.message.id === messageId) entry.view = reply;
        }
      }
      remember(reply);
      onChange();
    },
    message: (messageId) => {
      refresh();
      return botMessages.get(messageId);
    },
    view() {
      refresh();
      return view();
    },
  };

  function refresh(): void {
    for (const channel of channels) {
      for (const message of discord.channelMessages(channel)) {
        botMessages.set(message.id, message);
        if (knownPosts.has(message.id)) continue;
        knownPosts.add(message.id);
        entriesOf(channel).push({ kind: 'posted', at: Date.now(), messageId: message.id });
      }
    }
  }

  function view(): Record<string, PageMessage[]> {
    const out: Record<string, PageMessage[]> = {};
    for (const channel of channels) {
      const posts = new Map(discord.channelMessages(channel).map((m) => [m.id, m]));
      out[channel.id] = entriesOf(channel).flatMap((entry): PageMessage[] => {
        if (entry.kind === 'said') {
          return [
            {
              id: entry.message.id,
              at: entry.at,
              authorId: entry.authorId,
              content: entry.message.content,
              embeds: [],
              buttons: [],
              onlyFor: undefined,
              command: undefined,
              pending: false,
            },
          ];
        }
        if (entry.kind === 'posted') {
          const message = posts.get(entry.messageId);
          if (!message) return [];
          return [
            {
              id: message.id,
              at: entry.at,
              authorId: discord.botUserId,
              content: message.content,
              embeds: message.embeds,
              buttons: buttonsOf(message.components),
              onlyFor: undefined,
              command: undefined,
              pending: false,
              ...voiceOf(message),
            },
          ];
        }
        {
          const shown = entry.view ?? entry.reply?.edits.at(-1) ?? entry.reply;
          const command = { by: entry.by, line: entry.line };
          if (!shown || !entry.reply) {
            return [
              {
                id: entry.id,
                at: entry.at,
                authorId: discord.botUserId,
                content: entry.error ?? '',
                embeds: [],
                buttons: [],
                onlyFor: entry.by,
                command,
                pending: entry.error === undefined,
              },
            ];
          }
          const first = { ...fromReply(shown, entry.by, entry.at, entry.id), command };
          // A reply's message id stays the one pressed on, whatever edits and updates came later.
          const answer = { ...first, id: entry.reply.message.id };
          const followUps = entry.reply
            .followUps()
            .map((followUp) => fromReply(followUp, entry.by, entry.at, followUp.message.id));
          return [answer, ...followUps];
        }
      });
    }
    return out;
  }
}

function buttonsOf(components: Json[]): PageButton[] {
  const out: PageButton[] = [];
  const walk = (list: Json[]): void => {
    for (const component of list ?? []) {
      if (component?.type === 2 && typeof component.custom_id === 'string') {
        out.push({
          customId: component.custom_id,
          label: String(component.label ?? component.emoji?.name ?? component.custom_id),
          disabled: component.disabled === true,
        });
      }
      if (Array.isArray(component?.components)) walk(component.components);
    }
  };
  walk(components);
  return out;
}
