import type {
  AutocompleteInteraction,
  ButtonInteraction,
  ChatInputCommandInteraction,
  MessageContextMenuCommandInteraction,
  RESTPostAPIChatInputApplicationCommandsJSONBody,
  RESTPostAPIContextMenuApplicationCommandsJSONBody,
} from 'discord.js';
import type { AutoReadStore } from '../autoread/settings.ts';
import type { BudgetDeps } from '../budget/index.ts';
import type { CacheStore } from '../cache/index.ts';
import type { Logger } from '../log.ts';
import type { MemberStore } from '../members/index.ts';
import type { PreviewFile } from '../members/preview.ts';
import type { Privacy } from '../privacy/index.ts';
import type { SettingsStore } from '../storage/index.ts';
import type { ApiForm, TtsClient } from '../tts/index.ts';
import type { VoiceManager } from '../voice/manager.ts';
import type { SpeechRequest } from '../voice/session.ts';
import type { UserInstallConfig, VoiceMessages } from '../voice-message/index.ts';

/** Everything a command handler may use, passed explicitly: no globals, no container. */
export interface Deps extends BudgetDeps {
  readonly tts: TtsClient;
  readonly settings: SettingsStore;
  readonly voice: VoiceManager;
  /** Auto-read settings, bound channels and opt-outs (the /autoread command). */
  readonly autoread: AutoReadStore;
  readonly logger: Logger;
  /** `TTS_DEFAULT_SPEAKER`: an id or name, used when neither member nor server chose. */
  readonly defaultSpeaker: string | undefined;
  /** Best estimate of what `characters` will cost, when known. */
  readonly estimateCostUsd: (characters: number) => number | undefined;
  /** The audio cache's per-server choice and savings (`/budget cache`, `/budget show`). */
  readonly cache: Pick<CacheStore, 'savings' | 'guildEnabled' | 'setGuildEnabled'>;
  /** False when the operator turned the audio cache off (`AUDIO_CACHE_MB=0`). */
  readonly cacheEnabled: boolean;
  /** `AUDIO_CACHE_MAX_CHARS`: longer utterances are never cached. */
  readonly cacheMaxChars: number;
  /** Dictionary, block list, spoken names and temperatures (`/dictionary`, `/block`, `/nickname`, `/voice-tune`). */
  readonly members: MemberStore;
  /** `TTS_API_FORM`: the variant form has no temperature. */
  readonly ttsForm: ApiForm;
  /** A voice preview as a file to attach (through the cache and the guard), for members not in voice. */
  readonly renderPreviewFile: (request: SpeechRequest, guildId: string) => Promise<PreviewFile>;
  /** Speech as Discord voice messages (through the cache and the guard). */
  readonly voiceMessages: VoiceMessages;
  /** `USER_INSTALL` and its per-member daily limit. */
  readonly userInstall: UserInstallConfig;
  /** A member's deletion of what Herald keeps about them (`/forget-me`). */
  readonly privacy: Pick<Privacy, 'forgetMember'>;
}

/** A slash command: its definition (the name is written once, in `data`) and its handlers. */
export interface Command {
  readonly data: { readonly name: string; toJSON(): RESTPostAPIChatInputApplicationCommandsJSONBody };
  execute(interaction: ChatInputCommandInteraction<'cached'>, deps: Deps): Promise<void>;
  /** Choices for an option; also where Herald is installed to the member's account only (no server there). */
  autocomplete?(interaction: AutocompleteInteraction, deps: Deps): Promise<void>;
  /** Buttons whose custom id starts with `${data.name}:` are routed here. */
  button?(interaction: ButtonInteraction<'cached'>, deps: Deps): Promise<void>;
  /**
   * The command used where Herald is installed to the member's account only (a DM, a server Herald is not in);
   * with it, the command is registered for user installs when `USER_INSTALL=on`.
   */
  executeUserInstall?(interaction: ChatInputCommandInteraction, deps: Deps): Promise<void>;
}

/** A message command (right-click a message → Apps): its definition and its handlers. */
export interface MessageCommand {
  readonly data: { readonly name: string; toJSON(): RESTPostAPIContextMenuApplicationCommandsJSONBody };
  execute(interaction: MessageContextMenuCommandInteraction<'cached'>, deps: Deps): Promise<void>;
  /** Buttons whose custom id starts with `${data.name}:` are routed here. */
  button?(interaction: ButtonInteraction<'cached'>, deps: Deps): Promise<void>;
}
