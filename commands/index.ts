import type { Command } from '../src/command.ts';
import { autoread } from './autoread.ts';
import { block } from './block.ts';
import { budget } from './budget.ts';
import { dictionary } from './dictionary.ts';
import { join } from './join.ts';
import { leave } from './leave.ts';
import { nickname } from './nickname.ts';
import { skip } from './skip.ts';
import { speak } from './speak.ts';
import { stop } from './stop.ts';
import { unblock } from './unblock.ts';
import { voiceSet } from './voice-set.ts';
import { voiceTune } from './voice-tune.ts';
import { voices } from './voices.ts';

/** Every slash command Herald has, in the order Discord lists them. */
export const commands: readonly Command[] = [
  speak,
  voices,
  voiceSet,
  join,
  leave,
  skip,
  stop,
  autoread,
  budget,
  voiceTune,
  nickname,
  dictionary,
  block,
  unblock,
];
