import { apiError, type RestResponse } from './rest.ts';

/**
 * Discord's size limits on what a bot sends, checked as Discord does: an over-long field answers
 * HTTP 400, code 50035 "Invalid Form Body", with an `errors` object shaped like the body and naming the field
 * (`{"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH","message":"Must be 2000 or fewer in length."}]}}`).
 */
export const LIMITS = {
  content: 2000,
  embeds: 10,
  embedTitle: 256,
  embedDescription: 4096,
  embedFields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footerText: 2048,
  authorName: 256,
  /** Title, description, field names and values, footer and author text of all embeds together. */
  embedTotal: 6000,
  actionRows: 5,
  rowComponents: 5,
  choices: 25,
  choiceName: 100,
  choiceValue: 100,
} as const;

/** One problem with one field. */
interface FieldError {
  readonly code: string;
  readonly message: string;
}

/** One field's problems, or nested fields' (Discord's `errors` shape). */
interface FormErrors {
  _errors?: FieldError[];
  [key: string]: FormErrors | FieldError[] | undefined;
}

/** Discord counts characters as code points. */
const length = (value: unknown): number => (typeof value === 'string' ? [...value].length : 0);

const maxLength = (max: number): FormErrors => ({
  _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: `Must be ${max} or fewer in length.` }],
});

const between = (min: number, max: number): FormErrors => ({
  _errors: [{ code: 'BASE_TYPE_BAD_LENGTH', message: `Must be between ${min} and ${max} in length.` }],
});

type Fields = Record<string, unknown>;
const record = (value: unknown): Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : {};
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Adds `error` at `path` inside `errors`. */
function put(errors: FormErrors, path: readonly string[], error: FormErrors): void {
  let node = errors;
  for (const key of path) {
    node[key] ??= {};
    node = node[key] as FormErrors;
  }
  node._errors = [...(node._errors ?? []), ...(error._errors ?? [])];
}

function embedErrors(embeds: unknown, errors: FormErrors, at: readonly string[]): void {
  const all = list(embeds);
  if (all.length > LIMITS.embeds) put(errors, [...at, 'embeds'], maxLength(LIMITS.embeds));
  let total = 0;
  all.forEach((value, index) => {
    const embed = record(value);
    const here = [...at, 'embeds', String(index)];
    const check = (path: readonly string[], text: unknown, max: number): void => {
      total += length(text);
      if (length(text) > max) put(errors, [...here, ...path], maxLength(max));
    };
    check(['title'], embed.title, LIMITS.embedTitle);
    check(['description'], embed.description, LIMITS.embedDescription);
    check(['footer', 'text'], record(embed.footer).text, LIMITS.footerText);
    check(['author', 'name'], record(embed.author).name, LIMITS.authorName);
    const fields = list(embed.fields);
    if (fields.length > LIMITS.embedFields) put(errors, [...here, 'fields'], maxLength(LIMITS.embedFields));
    fields.forEach((field, i) => {
      check(['fields', String(i), 'name'], record(field).name, LIMITS.fieldName);
      check(['fields', String(i), 'value'], record(field).value, LIMITS.fieldValue);
    });
  });
  if (total > LIMITS.embedTotal) {
    put(errors, [...at, 'embeds'], {
      _errors: [
        {
          code: 'MAX_EMBED_SIZE_EXCEEDED',
          message: `Embed size exceeds maximum size of ${LIMITS.embedTotal}`,
        },
      ],
    });
  }
}

function messageErrors(body: unknown, errors: FormErrors, at: readonly string[]): void {
  const message = record(body);
  if (length(message.content) > LIMITS.content) put(errors, [...at, 'content'], maxLength(LIMITS.content));
  embedErrors(message.embeds, errors, at);
  const rows = list(message.components);
  if (rows.length > LIMITS.actionRows) put(errors, [...at, 'components'], maxLength(LIMITS.actionRows));
  rows.forEach((row, index) => {
    if (list(record(row).components).length > LIMITS.rowComponents) {
      put(errors, [...at, 'components', String(index), 'components'], maxLength(LIMITS.rowComponents));
    }
  });
}

function choiceErrors(choices: unknown, errors: FormErrors, at: readonly string[]): void {
  const all = list(choices);
  if (all.length > LIMITS.choices) put(errors, [...at, 'choices'], between(0, LIMITS.choices));
  all.forEach((value, index) => {
    const choice = record(value);
    const name = length(choice.name);
    if (name < 1 || name > LIMITS.choiceName) {
      put(errors, [...at, 'choices', String(index), 'name'], between(1, LIMITS.choiceName));
    }
    if (typeof choice.value === 'string' && length(choice.value) > LIMITS.choiceValue) {
      put(errors, [...at, 'choices', String(index), 'value'], maxLength(LIMITS.choiceValue));
    }
  });
}

const refusal = (errors: FormErrors): RestResponse | undefined =>
  Object.keys(errors).length === 0
    ? undefined
    : { status: 400, body: { ...(apiError(400, 50035, 'Invalid Form Body').body as object), errors } };

/** The 50035 answer for a message body (channel post or edit, follow-up, webhook edit), or undefined if it fits. */
export function messageRefusal(body: unknown): RestResponse | undefined {
  const errors: FormErrors = {};
  messageErrors(body, errors, []);
  return refusal(errors);
}

/** Interaction callback type 8, an autocomplete result. */
const AUTOCOMPLETE = 8;

/** The 50035 answer for an interaction callback (`{ type, data }`), or undefined if it fits. */
export function callbackRefusal(body: unknown): RestResponse | undefined {
  const callback = record(body);
  const errors: FormErrors = {};
  if (callback.type === AUTOCOMPLETE) choiceErrors(record(callback.data).choices, errors, ['data']);
  else messageErrors(callback.data, errors, ['data']);
  return refusal(errors);
}
