// Registers Herald's slash commands: `npm run deploy-commands` (global) or `npm run deploy-commands -- --guild <id>`.
import 'dotenv/config';
import { REST, Routes } from 'discord.js';
import { commands } from '../commands/index.ts';
import { isSnowflake } from '../src/snowflake.ts';

const token = process.env.DISCORD_TOKEN?.trim();
const applicationId = process.env.DISCORD_APPLICATION_ID?.trim();
const restUrl = process.env.DISCORD_REST_URL?.trim();
const guildFlag = process.argv.indexOf('--guild');
const guildId = guildFlag === -1 ? undefined : process.argv[guildFlag + 1];

const problems = [
  ...(token ? [] : ['DISCORD_TOKEN is missing.']),
  ...(applicationId && isSnowflake(applicationId) ? [] : ['DISCORD_APPLICATION_ID must be a numeric id.']),
  ...(guildFlag !== -1 && !(guildId && isSnowflake(guildId)) ? ['--guild needs a numeric server id.'] : []),
];
if (problems.length > 0 || !token || !applicationId) {
  console.error(`Cannot register commands:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  process.exit(1);
}

const rest = new REST(restUrl ? { api: restUrl } : {}).setToken(token);
const body = commands.map((command) => command.data.toJSON());
try {
  const route = guildId
    ? Routes.applicationGuildCommands(applicationId, guildId)
    : Routes.applicationCommands(applicationId);
  const saved = (await rest.put(route, { body })) as unknown[];
  console.log(`Registered ${saved.length} commands ${guildId ? `in server ${guildId}` : 'globally'}.`);
} catch (error) {
  // discord.js REST errors carry the status and Discord's message, never the token.
  console.error(`Registering commands failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
