// Registers Herald's slash commands: `npm run deploy-commands` (global) or `npm run deploy-commands -- --guild <id>`.
import 'dotenv/config';
import { parseArgs } from 'node:util';
import { REST, Routes } from 'discord.js';
import { commandBodies } from '../commands/index.ts';
import { isSnowflake } from '../src/discord/snowflake.ts';
import { parseUserInstallConfig } from '../src/voice-message/index.ts';

const token = process.env.DISCORD_TOKEN?.trim();
const applicationId = process.env.DISCORD_APPLICATION_ID?.trim();
const restUrl = process.env.DISCORD_REST_URL?.trim();
// `--guild 123` and `--guild=123` alike; anything else (a typo such as `--guid`) is refused rather than silently
// registering globally.
let guildId: string | undefined;
const problems: string[] = [];
try {
  const { values } = parseArgs({ options: { guild: { type: 'string' } }, strict: true });
  guildId = values.guild;
  if (guildId !== undefined && !isSnowflake(guildId)) problems.push('--guild needs a numeric server id.');
} catch (error) {
  problems.push(`${(error as Error).message} Use --guild <server id>, or nothing to register globally.`);
}
if (!token) problems.push('DISCORD_TOKEN is missing.');
// USER_INSTALL=on also offers /speak to members who install Herald to their account (voice messages).
const userInstall = parseUserInstallConfig(process.env);
if (!userInstall.ok) problems.push(...userInstall.problems);
if (!(applicationId && isSnowflake(applicationId)))
  problems.push('DISCORD_APPLICATION_ID must be a numeric id.');
if (problems.length > 0 || !token || !applicationId || !userInstall.ok) {
  console.error(`Cannot register commands:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}

const rest = new REST(restUrl ? { api: restUrl } : {}).setToken(token);
const body = commandBodies({ userInstall: userInstall.value.enabled });
try {
  const route = guildId
    ? Routes.applicationGuildCommands(applicationId, guildId)
    : Routes.applicationCommands(applicationId);
  const saved = (await rest.put(route, { body })) as unknown[];
  const installs = userInstall.value.enabled ? ', for servers and user installs' : '';
  console.log(
    `Registered ${saved.length} commands ${guildId ? `in server ${guildId}` : 'globally'}${installs}.`,
  );
} catch (error) {
  // discord.js REST errors carry the status and Discord's message, never the token.
  console.error(`Registering commands failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
