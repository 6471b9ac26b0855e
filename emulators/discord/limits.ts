import type { RestResponse } from './rest.ts';

/**
 * Discord's limits on what a bot posts, refused as Discord refuses them: HTTP 400, code 50035 "Invalid Form Body",
 * with an `errors` object naming the field. Message content 2,000 characters; 10 embeds, a title of 256, a
 * description of 4,096, 25 fields, 6,000 characters in all; 5 rows of 5 buttons, a label of 80, a custom id of 100;
 * autocomplete 25 choices, each name and string value 100.
 */
export const DISCORD_LIMITS = {
  content: 2_000,
  embeds: 10,
  embedTitle: 256,
  embedDescription: 4_096,
  embedFields: 25,
  embedTotal: 6_000,
  actionRows: 5,
  rowComponents: 5,
  buttonLabel: 80,
  customId: 100,
  choices: 25,
  choiceName: 100,
  choiceValue: 100,
} as const;

/** Discord's characters: code points. */
const length = (value: unknown): number => (typeof value === 'string' ? [...value].length : 0);

function invalid(path: string, code: string, message: string): RestResponse {
  // Discord nests the error under each segment of the field's path: {"content": {"_errors": [...]}}.
  const errors = path
    .split('.')
    .reverse()
    .reduce<Record<string, unknown>>((inner, key) => ({ [key]: inner }), { _errors: [{ code, message }] });
  return { status: 400, body: { message: 'Invalid Form Body', code: 50035, errors } };
}

const tooLong = (path: string, max: number): RestResponse =>
  invalid(path, 'BASE_TYPE_MAX_LENGTH', `Must be ${max} or fewer in length.`);

/** The refusal of a message body (a reply, a follow-up, an edit, a channel message), or undefined. */
export function messageLimitRefusal(body: Record<string, unknown>): RestResponse | undefined {
  if (length(body.content) > DISCORD_LIMITS.content) return tooLong('content', DISCORD_LIMITS.content);
  const embeds = Array.isArray(body.embeds) ? (body.embeds as Record<string, unknown>[]) : [];
  if (embeds.length > DISCORD_LIMITS.embeds) return tooLong('embeds', DISCORD_LIMITS.embeds);
  let total = 0;
  for (const [i, embed] of embeds.entries()) {
    if (length(embed.title) > DISCORD_LIMITS.embedTitle)
      return tooLong(`embeds.${i}.title`, DISCORD_LIMITS.embedTitle);
    if (length(embed.description) > DISCORD_LIMITS.embedDescription) {
      return tooLong(`embeds.${i}.description`, DISCORD_LIMITS.embedDescription);
    }
    const fields = Array.isArray(embed.fields) ? (embed.fields as Record<string, unknown>[]) : [];
    if (fields.length > DISCORD_LIMITS.embedFields)
      return tooLong(`embeds.${i}.fields`, DISCORD_LIMITS.embedFields);
    total += length(embed.title) + length(embed.description);
    for (const field of fields) total += length(field.name) + length(field.value);
  }
  if (total > DISCORD_LIMITS.embedTotal) {
    return invalid(
      'embeds',
      'BASE_TYPE_MAX_LENGTH',
      `Embed size exceeds maximum size of ${DISCORD_LIMITS.embedTotal}`,
    );
  }
  const rows = Array.isArray(body.components) ? (body.components as Record<string, unknown>[]) : [];
  if (rows.length > DISCORD_LIMITS.actionRows) return tooLong('components', DISCORD_LIMITS.actionRows);
  for (const [i, row] of rows.entries()) {
    const items = Array.isArray(row.components) ? (row.components as Record<string, unknown>[]) : [];
    if (items.length > DISCORD_LIMITS.rowComponents) {
      return tooLong(`components.${i}.components`, DISCORD_LIMITS.rowComponents);
    }
    for (const [j, item] of items.entries()) {
      if (length(item.label) > DISCORD_LIMITS.buttonLabel) {
        return tooLong(`components.${i}.components.${j}.label`, DISCORD_LIMITS.buttonLabel);
      }
      if (length(item.custom_id) > DISCORD_LIMITS.customId) {
        return tooLong(`components.${i}.components.${j}.custom_id`, DISCORD_LIMITS.customId);
      }
    }
  }
  return undefined;
}

/** The refusal of an autocomplete answer's choices, or undefined. */
export function choicesRefusal(data: Record<string, unknown>): RestResponse | undefined {
  const choices = Array.isArray(data.choices) ? (data.choices as Record<string, unknown>[]) : [];
  if (choices.length > DISCORD_LIMITS.choices) return tooLong('choices', DISCORD_LIMITS.choices);
  for (const [i, choice] of choices.entries()) {
    if (length(choice.name) > DISCORD_LIMITS.choiceName)
      return tooLong(`choices.${i}.name`, DISCORD_LIMITS.choiceName);
    if (length(choice.value) > DISCORD_LIMITS.choiceValue) {
      return tooLong(`choices.${i}.value`, DISCORD_LIMITS.choiceValue);
    }
  }
  return undefined;
}
