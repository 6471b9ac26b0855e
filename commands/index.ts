import type { Command } from '../src/command.ts';
import { autoread } from './autoread.ts';
import { budget } from './budget.ts';
import { join } from './join.ts';
import { leave } from './leave.ts';
import { skip } from './skip.ts';
import { speak } from './speak.ts';
import { stop } from './stop.ts';
import { voiceSet } from './voice-set.ts';
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
];
