// Speech as a Discord voice message: its length and waveform from the decoded audio, rendering through the cache
// and the guard, posting, and the user-install settings. Import from here.
export {
  analyseOggOpus,
  MAX_WAVEFORM_POINTS,
  type VoiceClipFacts,
  WAVEFORM_POINT_MS,
  waveformPoints,
} from './analyse.ts';
export {
  createVoiceMessages,
  NOT_OPUS,
  VOICE_MESSAGE_FILE,
  type VoiceClip,
  type VoiceMessages,
  type VoiceMessagesOptions,
} from './render.ts';
export {
  MISSING_VOICE_MESSAGE_PERMISSION,
  sendVoiceMessage,
  type VoiceMessageDeps,
  type VoiceMessageJob,
  voiceMessageBody,
} from './send.ts';
export {
  DEFAULT_USER_INSTALL_CHARS_PER_DAY,
  parseUserInstallConfig,
  USER_INSTALL_LEDGER_ID,
  type UserInstallConfig,
  userInstallRefusal,
} from './user-install.ts';
