// The sandbox page: plain DOM and Web Audio, no framework. The server pushes the whole state as JSON over one
// WebSocket (and the voice channel's audio as binary 48 kHz mono PCM); the page redraws from it and posts the
// visitor's actions to /api/*.

const SAMPLE_RATE = 48_000;
// About -35 dBFS, as the tests' analyser: quieter samples count as silence.
const SOUND_LEVEL = 600 / 32_768;
// A pause this long splits two utterances.
const SPLIT_GAP_MS = 60;

const $ = (id) => document.getElementById(id);
const el = (tag, attributes = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === 'class') node.className = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child !== undefined && child !== null) node.append(child);
  }
  return node;
};

let state = null;
let me = null;
let channelId = null;
let speaking = false;

// --- talking to the sandbox ---------------------------------------------------------------------------------

async function post(action, body) {
  const response = await fetch(`/api/${action}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const result = await response.json();
  if (!response.ok) throw new Error(result.error ?? response.statusText);
  return result;
}

function report(error) {
  $('connection').textContent = `⚠ ${error.message}`;
}

function connect() {
  const socket = new WebSocket(`ws://${location.host}/ws`);
  socket.binaryType = 'arraybuffer';
  socket.addEventListener('open', () => {
    $('connection').textContent = 'connected';
  });
  socket.addEventListener('close', () => {
    $('connection').textContent = 'disconnected: is the sandbox still running?';
    setTimeout(connect, 1000);
  });
  socket.addEventListener('message', (event) => {
    if (event.data instanceof ArrayBuffer) return play(new Int16Array(event.data));
    const message = JSON.parse(event.data);
    if (message.type === 'state') {
      state = message.state;
      render();
    } else if (message.type === 'speaking') {
      speaking = message.on;
      if (!message.on) heard.end();
      renderSpeaking();
    }
  });
}

// --- drawing ------------------------------------------------------------------------------------------------

const nameOf = (id) =>
  id === state.bot.id ? state.bot.name : (state.members.find((m) => m.id === id)?.name ?? 'someone');
const channelName = (id) => state.channels.find((c) => c.id === id)?.name ?? 'unknown';
const myMember = () => state.members.find((m) => m.id === me);

function render() {
  if (me === null) me = state.members.find((m) => m.role === 'member')?.id ?? state.members[0].id;
  if (channelId === null) channelId = state.channels.find((c) => c.type === 'text').id;
  $('guild-name').textContent = state.guild.name;
  renderIdentity();
  renderChannels();
  renderMessages();
  renderMembers();
  renderModeration();
  renderService();
  renderSpeaking();
  if ($('command').options.length === 0) renderCommandPicker();
}

function renderIdentity() {
  const select = $('me');
  select.replaceChildren(
    ...state.members.map((m) =>
      el(
        'option',
        { value: m.id, selected: m.id === me },
        `${m.name}${m.role === 'admin' ? ' (admin)' : ''}`,
      ),
    ),
  );
}

function renderChannels() {
  $('text-channels').replaceChildren(
    ...state.channels
      .filter((c) => c.type === 'text')
      .map((c) =>
        el(
          'li',
          {},
          el(
            'button',
            {
              class: `channel${c.id === channelId ? ' active' : ''}`,
              'data-channel': c.name,
              onclick: () => {
                channelId = c.id;
                render();
              },
            },
            `# ${c.name}`,
          ),
        ),
      ),
  );
  $('voice-channels').replaceChildren(
    ...voiceChannels().map((c) => {
      const inside = state.members.filter((m) => m.voiceChannelId === c.id);
      const herald = state.bot.voiceChannelId === c.id;
      return el(
        'li',
        { 'data-voice-channel': c.name },
        el('div', { class: 'channel' }, `${voiceIcon(c)} ${c.name}`),
        herald
          ? el(
              'div',
              { class: `voice-member${speaking ? ' speaking' : ''}`, id: 'herald-in-voice' },
              el('span', { class: 'who' }, `${speaking ? '🗣' : '🤖'} Herald`),
              ...heraldBadges().map((badge) => el('span', { class: 'badge' }, badge)),
            )
          : null,
        ...inside.map((m) => el('div', { class: 'voice-member' }, m.name)),
      );
    }),
  );
  $('channel-title').textContent = `# ${channelName(channelId)}`;
  $('message-input').placeholder = `Message #${channelName(channelId)} as ${nameOf(me)}`;
}

function renderMessages() {
  const list = $('messages');
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  const shown = (state.messages[channelId] ?? []).filter((m) => !m.onlyFor || m.onlyFor === me);
  list.replaceChildren(...shown.map(renderMessage));
  if (atBottom) list.scrollTop = list.scrollHeight;
}

function renderMessage(m) {
  const fromBot = m.authorId === state.bot.id;
  return el(
    'li',
    {
      class: `message${m.onlyFor ? ' only-you' : ''}`,
      'data-message': m.id,
      'data-author': nameOf(m.authorId),
    },
    m.command ? el('div', { class: 'used' }, `↪ ${nameOf(m.command.by)} used ${m.command.line}`) : null,
    el('span', { class: 'author' }, nameOf(m.authorId)),
    fromBot ? el('span', { class: 'bot-tag' }, 'APP') : null,
    el('span', { class: 'muted' }, ` ${new Date(m.at).toLocaleTimeString()}`),
    m.pending ? el('div', { class: 'muted' }, 'Herald is thinking…') : null,
    m.content ? el('div', { class: 'content' }, ...markdown(m.content)) : null,
    ...m.embeds.map(renderEmbed),
    m.voice ? renderVoiceMessage(m) : null,
    m.buttons.length > 0
      ? el(
          'div',
          { class: 'buttons' },
          ...m.buttons.map((b) =>
            el(
              'button',
              {
                type: 'button',
                class: 'secondary',
                disabled: b.disabled,
                'data-custom-id': b.customId,
                onclick: () => post('press', { as: me, messageId: m.id, customId: b.customId }).catch(report),
              },
              b.label,
            ),
          ),
        )
      : null,
    m.onlyFor ? el('div', { class: 'ephemeral' }, '👁 Only visible to you') : null,
  );
}

/** What each voice message bubble is doing: 'playing' or 'played', with the length the page decoded. */
const voicePlays = new Map();

/** A voice message as Discord shows one: a play button, its waveform, its length. */
function renderVoiceMessage(m) {
  const play = voicePlays.get(m.id);
  // As Discord draws it: the loudest point full height, silence a low line.
  const loudest = Math.max(1, ...m.voice.waveform);
  const bars = m.voice.waveform.map((level) => {
    const bar = el('span', { class: 'bar' });
    bar.style.height = `${Math.max(12, Math.round((level / loudest) * 100))}%`;
    return bar;
  });
  return el(
    'div',
    {
      class: 'voice-message',
      'data-voice-message': m.id,
      'data-state': play?.state ?? 'ready',
      'data-decoded-secs': play?.decodedSecs?.toFixed(3),
      'data-duration-secs': m.voice.durationSecs,
    },
    el(
      'button',
      {
        type: 'button',
        class: 'play',
        'aria-label': 'Play voice message',
        disabled: play?.state === 'playing',
        onclick: () => playVoiceMessage(m).catch(report),
      },
      play?.state === 'playing' ? '❚❚' : '▶',
    ),
    el('div', { class: 'waveform', 'data-points': bars.length }, ...bars),
    el('span', { class: 'muted' }, `${m.voice.durationSecs.toFixed(1)} s`),
  );
}

/** Decodes the voice message's Ogg Opus in the page (as Discord's client does) and plays it. */
async function playVoiceMessage(m) {
  await startAudio();
  const bytes = await (await fetch(m.voice.src)).arrayBuffer();
  const buffer = await audio.context.decodeAudioData(bytes);
  const source = audio.context.createBufferSource();
  source.buffer = buffer;
  source.connect(audio.analyser);
  voicePlays.set(m.id, { state: 'playing', decodedSecs: buffer.duration });
  source.addEventListener('ended', () => {
    voicePlays.set(m.id, { state: 'played', decodedSecs: buffer.duration });
    renderMessages();
  });
  source.start();
  renderMessages();
}

function renderEmbed(embed) {
  return el(
    'div',
    { class: 'embed' },
    embed.title ? el('strong', {}, ...markdown(embed.title)) : null,
    embed.description ? el('div', {}, ...markdown(embed.description)) : null,
    ...(embed.fields ?? []).map((f) =>
      el('div', {}, el('strong', {}, f.name), el('div', {}, ...markdown(f.value))),
    ),
    embed.footer?.text ? el('div', { class: 'muted' }, embed.footer.text) : null,
  );
}

/** A small, safe subset of Discord's markdown: bold, italics, code, mentions; text nodes only, never HTML. */
function markdown(text) {
  const nodes = [];
  const pattern = /\*\*(.+?)\*\*|`([^`]+)`|<@!?(\d+)>|<#(\d+)>|\*([^*]+)\*|_([^_]+)_|\n/g;
  let at = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > at) nodes.push(text.slice(at, match.index));
    const [all, bold, code, user, channel, italic, underscored] = match;
    if (bold !== undefined) nodes.push(el('strong', {}, ...markdown(bold)));
    else if (code !== undefined) nodes.push(el('code', {}, code));
    else if (user !== undefined) nodes.push(el('span', { class: 'mention' }, `@${nameOf(user)}`));
    else if (channel !== undefined) nodes.push(el('span', { class: 'mention' }, `#${channelName(channel)}`));
    else if (italic !== undefined || underscored !== undefined)
      nodes.push(el('em', {}, italic ?? underscored));
    else if (all === '\n') nodes.push(el('br'));
    at = match.index + all.length;
  }
  if (at < text.length) nodes.push(text.slice(at));
  return nodes;
}

/** Voice channels and the stage, as Discord lists them together. */
const voiceChannels = () => state.channels.filter((c) => c.type === 'voice' || c.type === 'stage');
const voiceIcon = (channel) => (channel.type === 'stage' ? '🎙' : '🔊');

/** What Discord's client shows beside Herald's name: a moderator's mute, a stage's audience, a raised hand. */
function heraldBadges() {
  const bot = state.bot;
  return [
    bot.muted ? '🔇 server-muted' : null,
    bot.suppressed ? (bot.requestedToSpeak ? '✋ asked to speak' : 'in the audience') : null,
  ].filter(Boolean);
}

/** A moderator's hand on Herald: mute or unmute it, invite it to speak on the stage (the admin only). */
function renderModeration() {
  const bot = state.bot;
  const moderator = myMember()?.role === 'admin';
  const act = (what) => () => post('moderate', { as: me, act: what }).catch(report);
  $('moderation').replaceChildren(
    el('h3', {}, 'Moderate Herald'),
    el(
      'p',
      { class: 'muted' },
      moderator ? 'As a moderator of this server:' : 'Moderators only: choose Ada Admin at the top.',
    ),
    el(
      'button',
      {
        type: 'button',
        id: 'mute-herald',
        // Discord server-mutes only a member in a voice channel.
        disabled: !moderator || !bot.voiceChannelId,
        onclick: act(bot.muted ? 'unmute' : 'mute'),
      },
      bot.muted ? '🔊 Unmute Herald' : '🔇 Server-mute Herald',
    ),
    el(
      'button',
      {
        type: 'button',
        id: 'invite-herald',
        disabled: !moderator || !bot.suppressed,
        onclick: act('invite'),
      },
      '🎙 Invite Herald to speak',
    ),
  );
}

function renderMembers() {
  const channels = voiceChannels();
  const everyone = [
    ...state.members,
    { id: state.bot.id, name: state.bot.name, role: 'app', voiceChannelId: state.bot.voiceChannelId },
  ];
  $('members').replaceChildren(
    ...everyone.map((m) =>
      el(
        'tr',
        { 'data-member': m.name },
        el('td', {}, m.name, m.role === 'member' ? null : el('span', { class: 'muted' }, ` ${m.role}`)),
        el(
          'td',
          {},
          el(
            'select',
            {
              'aria-label': `Voice channel of ${m.name}`,
              onchange: (event) =>
                post('move', { memberId: m.id, channelId: event.target.value || null }).catch(report),
            },
            el('option', { value: '', selected: m.voiceChannelId === null }, 'not in voice'),
            ...channels.map((c) =>
              el('option', { value: c.id, selected: m.voiceChannelId === c.id }, `${voiceIcon(c)} ${c.name}`),
            ),
          ),
        ),
      ),
    ),
  );
}

/** Dollars with as many decimals as the amount needs (at least two, at most six): $9.9995, $10.00, $0.0001. */
const usd = (value) => {
  const [whole, decimals = ''] = Number(value).toFixed(6).split('.');
  return `$${whole}.${decimals.replace(/0+$/, '').padEnd(2, '0')}`;
};

function renderService() {
  const service = state.service;
  const panel = $('service');
  if (panel.contains(document.activeElement) && document.activeElement.tagName === 'INPUT') {
    // Redrawing would throw away what the visitor is typing; figures catch up on the next change.
    return;
  }
  if (service.kind === 'real') {
    panel.replaceChildren(
      el('h3', {}, 'TTS service (real)'),
      el('p', {}, `The service at ${service.host}: real voices, real money. Herald’s budget guard is on.`),
      el(
        'div',
        { class: 'figures' },
        el('span', {}, 'Balance'),
        el(
          'strong',
          { id: 'balance' },
          service.balanceUsd === null ? 'not seen yet' : `${usd(service.balanceUsd)} (as last reported)`,
        ),
        el('span', {}, 'Herald’s floor'),
        el('span', {}, usd(service.floorUsd)),
        el('span', {}, 'Spending'),
        el('span', {}, service.blocked === null ? 'allowed' : `stopped (${service.blocked})`),
      ),
      el('h3', {}, 'Herald’s ledger (newest first)'),
      el(
        'table',
        { class: 'ledger', id: 'ledger' },
        el('tr', {}, ...['time', 'who', 'chars', 'cost', 'balance'].map((h) => el('th', {}, h))),
        ...service.ledger.map((row) =>
          el(
            'tr',
            {},
            el('td', {}, new Date(row.at).toLocaleTimeString()),
            el('td', {}, nameOf(row.userId)),
            el('td', {}, String(row.characters)),
            el('td', {}, row.costUsd === null ? '?' : usd(row.costUsd)),
            el('td', {}, row.balanceAfterUsd === null ? '?' : usd(row.balanceAfterUsd)),
          ),
        ),
      ),
    );
    return;
  }
  const act = (body) => post('service', body).catch(report);
  const amount = el('input', { type: 'number', min: '0', step: '0.5', value: '5', id: 'top-up-amount' });
  const price = el('input', {
    type: 'number',
    min: '0',
    step: '0.00001',
    value: String(service.pricePerCharUsd),
  });
  panel.replaceChildren(
    el('h3', {}, 'TTS service (local emulator)'),
    el(
      'div',
      { class: 'figures' },
      el('span', {}, 'Balance'),
      el('strong', { id: 'balance', 'data-usd': String(service.balanceUsd) }, usd(service.balanceUsd)),
      el('span', {}, 'Herald’s floor'),
      el('span', {}, usd(service.floorUsd)),
      el('span', {}, 'Price'),
      el('span', {}, `${usd(service.pricePerCharUsd)} a character`),
      el('span', {}, 'Charged so far'),
      el('span', { id: 'charged', 'data-usd': String(service.chargedUsd) }, usd(service.chargedUsd)),
    ),
    el(
      'div',
      { class: 'row' },
      amount,
      el(
        'button',
        { type: 'button', onclick: () => act({ action: 'top-up', usd: Number(amount.value) }) },
        'Top up',
      ),
      el(
        'button',
        { type: 'button', id: 'drain', class: 'secondary', onclick: () => act({ action: 'drain' }) },
        'Drain to $0',
      ),
    ),
    el(
      'div',
      { class: 'row' },
      price,
      el(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => act({ action: 'price', usd: Number(price.value) }),
        },
        'Set price',
      ),
    ),
    el('h3', {}, 'Inject a fault into the next request'),
    el(
      'div',
      { class: 'faults' },
      ...[
        ['latency', '3 s latency'],
        ['429', '429'],
        ['503', '503'],
        ['402', '402'],
        ['slow', 'half real time'],
        ['slows-down', 'slows down after 1 s'],
        ['stall', 'stall'],
        ['reset', 'reset'],
        ['ends-early', 'ends at half'],
      ].map(([fault, label]) =>
        el(
          'button',
          {
            type: 'button',
            class: 'secondary',
            'data-fault': fault,
            onclick: () => act({ action: 'fault', fault }),
          },
          label,
        ),
      ),
    ),
    el(
      'p',
      { class: 'muted', id: 'injected' },
      service.injected.length > 0 ? `Injected: ${service.injected.map((f) => f.label).join(', ')}` : '',
    ),
    el('h3', {}, 'Ledger (newest first)'),
    el(
      'table',
      { class: 'ledger', id: 'ledger' },
      el('tr', {}, ...['time', 'voice', 'chars', 'status', 'charged'].map((h) => el('th', {}, h))),
      ...service.ledger.map((row) =>
        el(
          'tr',
          { title: `${row.text} (${row.requestId})`, 'data-status': String(row.status) },
          el('td', {}, new Date(row.at).toLocaleTimeString()),
          el('td', {}, row.speaker),
          el('td', {}, String(row.characters)),
          el('td', {}, row.status === 0 ? '…' : String(row.status)),
          el('td', {}, usd(row.chargedUsd)),
        ),
      ),
    ),
  );
}

function renderSpeaking() {
  if (!state) return;
  const inVoice = state.bot.voiceChannelId;
  $('speaking').textContent = speaking
    ? `🗣 Herald is speaking in ${channelName(inVoice)}${heard.current?.voice ? ` (${heard.current.voice})` : ''}`
    : inVoice
      ? `Herald is in ${channelName(inVoice)}, silent.`
      : 'Herald is not in voice.';
  const mine = myMember()?.voiceChannelId;
  $('listen-hint').textContent = !audio
    ? 'Sound is off: press “Turn on sound” to hear the voice channel.'
    : inVoice && mine !== inVoice
      ? `You are not in ${channelName(inVoice)}, so you do not hear Herald.`
      : '';
  const herald = $('herald-in-voice');
  if (herald) {
    herald.className = `voice-member${speaking ? ' speaking' : ''}`;
    herald.querySelector('.who').textContent = `${speaking ? '🗣' : '🤖'} Herald`;
  }
}

// --- slash commands ---------------------------------------------------------------------------------------

function renderCommandPicker() {
  $('command').replaceChildren(
    ...state.commands.map((c) => el('option', { value: c.name, title: c.description }, `/${c.name}`)),
  );
  renderSubcommands();
}

function currentCommand() {
  return state.commands.find((c) => c.name === $('command').value);
}

function renderSubcommands() {
  const subs = (currentCommand()?.options ?? []).filter((o) => o.type === 1);
  const select = $('subcommand');
  select.hidden = subs.length === 0;
  select.replaceChildren(...subs.map((s) => el('option', { value: s.name, title: s.description }, s.name)));
  renderOptions();
}

function currentOptions() {
  const command = currentCommand();
  const subs = (command?.options ?? []).filter((o) => o.type === 1);
  if (subs.length === 0) return command?.options ?? [];
  return subs.find((s) => s.name === $('subcommand').value)?.options ?? [];
}

function renderOptions() {
  $('options').replaceChildren(...currentOptions().map(renderOption));
}

function renderOption(option) {
  const label = `${option.name}${option.required ? ' *' : ''}`;
  const attrs = { name: option.name, 'data-type': String(option.type), title: option.description };
  let input;
  if (option.choices) {
    input = el(
      'select',
      attrs,
      option.required ? null : el('option', { value: '' }, '—'),
      ...option.choices.map((c) => el('option', { value: String(c.value) }, c.name)),
    );
  } else if (option.type === 5) {
    input = el(
      'select',
      attrs,
      option.required ? null : el('option', { value: '' }, '—'),
      el('option', { value: 'true' }, 'true'),
      el('option', { value: 'false' }, 'false'),
    );
  } else if (option.type === 7) {
    input = el(
      'select',
      attrs,
      option.required ? null : el('option', { value: '' }, '—'),
      ...state.channels.map((c) =>
        el('option', { value: c.id }, c.type === 'text' ? `# ${c.name}` : `🔊 ${c.name}`),
      ),
    );
  } else {
    input = el('input', {
      ...attrs,
      type: option.type === 4 || option.type === 10 ? 'number' : 'text',
      step: option.type === 10 ? 'any' : undefined,
      placeholder: option.description,
    });
  }
  const wrapper = el('label', {}, label, input);
  if (option.autocomplete) {
    const choices = el('ul', { class: 'choices', hidden: true, 'data-choices': option.name });
    wrapper.append(choices);
    let timer;
    input.addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => suggest(option.name, choices, input), 120);
    });
    input.addEventListener('focus', () => suggest(option.name, choices, input));
    input.addEventListener('blur', () =>
      setTimeout(() => {
        choices.hidden = true;
      }, 200),
    );
  }
  return wrapper;
}

function optionValues() {
  const values = {};
  for (const input of $('options').querySelectorAll('[name]')) {
    if (input.value === '') continue;
    const type = Number(input.dataset.type);
    if (type === 4 || type === 10) values[input.name] = Number(input.value);
    else if (type === 5) values[input.name] = input.value === 'true';
    else if (type === 7) values[input.name] = { channel: input.value };
    else values[input.name] = input.value;
  }
  return values;
}

async function suggest(name, list, input) {
  const subcommand = $('subcommand').hidden ? undefined : $('subcommand').value;
  try {
    const { choices } = await post('autocomplete', {
      as: me,
      channelId,
      command: $('command').value,
      subcommand,
      options: { ...optionValues(), [name]: input.value },
      focused: name,
    });
    list.replaceChildren(
      ...choices.map((c) =>
        el(
          'li',
          {},
          el(
            'button',
            {
              type: 'button',
              'data-value': String(c.value),
              onmousedown: (event) => {
                event.preventDefault();
                input.value = String(c.value);
                list.hidden = true;
              },
            },
            c.name,
          ),
        ),
      ),
    );
    list.hidden = choices.length === 0;
  } catch (error) {
    report(error);
  }
}

$('command').addEventListener('change', renderSubcommands);
$('subcommand').addEventListener('change', renderOptions);
$('command-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const subcommand = $('subcommand').hidden ? undefined : $('subcommand').value;
  const missing = currentOptions().filter((o) => o.required && optionValues()[o.name] === undefined);
  if (missing.length > 0) return report(new Error(`fill in ${missing.map((o) => o.name).join(', ')}`));
  post('slash', { as: me, channelId, command: $('command').value, subcommand, options: optionValues() })
    .then(() => {
      for (const input of $('options').querySelectorAll('input')) input.value = '';
    })
    .catch(report);
});
$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = $('message-input');
  if (input.value.trim() === '') return;
  post('message', { as: me, channelId, content: input.value })
    .then(() => {
      input.value = '';
    })
    .catch(report);
});
$('me').addEventListener('change', (event) => {
  me = event.target.value;
  render();
});

// --- the voice channel, played and measured -----------------------------------------------------------------

let audio = null;

function startAudio() {
  if (!audio) {
    const context = new AudioContext({ sampleRate: SAMPLE_RATE });
    const analyser = context.createAnalyser();
    analyser.fftSize = 2048;
    analyser.connect(context.destination);
    audio = { context, analyser, nextTime: 0 };
    requestAnimationFrame(meter);
  }
  return audio.context.resume().then(() => {
    $('sound').textContent = audio.context.state === 'running' ? '🔊 Sound on' : '🔈 Turn on sound';
    renderSpeaking();
  });
}
$('sound').addEventListener('click', () => startAudio().catch(report));

/** Schedules one PCM frame for playback, right after the previous one; what is scheduled is what is measured. */
function play(samples) {
  if (audio?.context.state !== 'running' || !state) return;
  const inVoice = state.bot.voiceChannelId;
  if (!inVoice || myMember()?.voiceChannelId !== inVoice) return;
  const floats = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++) floats[i] = samples[i] / 32_768;
  const buffer = audio.context.createBuffer(1, floats.length, SAMPLE_RATE);
  buffer.copyToChannel(floats, 0);
  const source = audio.context.createBufferSource();
  source.buffer = buffer;
  source.connect(audio.analyser);
  const now = audio.context.currentTime;
  if (audio.nextTime < now + 0.02) {
    // The first frame, or an underrun: a short jitter buffer. (Utterances are split on the samples, not here.)
    audio.nextTime = now + 0.1;
  }
  source.start(audio.nextTime);
  audio.nextTime += buffer.duration;
  heard.push(floats);
}

function meter() {
  const data = new Float32Array(audio.analyser.fftSize);
  audio.analyser.getFloatTimeDomainData(data);
  let sum = 0;
  for (const v of data) sum += v * v;
  const rms = Math.sqrt(sum / data.length);
  const fill = $('meter-fill');
  fill.style.width = `${Math.min(100, rms * 400)}%`;
  fill.dataset.rms = rms.toFixed(4);
  // The loudest the analyser has seen: it only sees what the audio graph really rendered.
  fill.dataset.peak = Math.max(Number(fill.dataset.peak ?? 0), rms).toFixed(4);
  requestAnimationFrame(meter);
}

/** What the page played, cut into utterances at pauses, each with its length and pitch, for the timeline. */
const heard = {
  current: null,
  push(floats) {
    this.current ??= { at: Date.now(), samples: [], voice: null };
    this.current.samples.push(floats);
    const voice = voiceFor(pitch(floats));
    if (voice && voice !== this.current.voice) {
      this.current.voice = voice;
      renderSpeaking();
    }
  },
  end() {
    const clip = this.current;
    this.current = null;
    if (!clip) return;
    const all = new Float32Array(clip.samples.reduce((n, s) => n + s.length, 0));
    let at = 0;
    for (const s of clip.samples) {
      all.set(s, at);
      at += s.length;
    }
    for (const segment of segments(all)) addToTimeline(clip.at + segment.startMs, segment);
  },
};

function segments(pcm) {
  const gap = (SPLIT_GAP_MS * SAMPLE_RATE) / 1000;
  const ranges = [];
  let current = null;
  for (let i = 0; i < pcm.length; i++) {
    if (Math.abs(pcm[i]) <= SOUND_LEVEL) continue;
    if (current && i - current.end < gap) current.end = i + 1;
    else {
      current = { start: i, end: i + 1 };
      ranges.push(current);
    }
  }
  return ranges
    .map(({ start, end }) => ({
      startMs: (start * 1000) / SAMPLE_RATE,
      durationMs: ((end - start) * 1000) / SAMPLE_RATE,
      hz: pitch(pcm.subarray(start, end)),
    }))
    .filter((s) => s.durationMs >= 20);
}

/** Frequency from the mean period between upward zero crossings (with hysteresis against codec noise). */
function pitch(pcm) {
  let peak = 0;
  for (const v of pcm) peak = Math.max(peak, Math.abs(v));
  const hysteresis = peak / 10;
  let armed = false;
  let first = -1;
  let last = -1;
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) {
    if (pcm[i] < -hysteresis) armed = true;
    if (armed && pcm[i - 1] < 0 && pcm[i] >= 0) {
      const at = i - 1 + -pcm[i - 1] / (pcm[i] - pcm[i - 1]);
      if (first < 0) first = at;
      last = at;
      crossings++;
      armed = false;
    }
  }
  return crossings < 2 ? 0 : ((crossings - 1) * SAMPLE_RATE) / (last - first);
}

function voiceFor(hz) {
  const speakers = state?.service.speakers ?? [];
  const nearest = speakers.reduce(
    (best, s) => (!best || Math.abs(s.toneHz - hz) < Math.abs(best.toneHz - hz) ? s : best),
    null,
  );
  return nearest && Math.abs(nearest.toneHz - hz) <= Math.max(8, nearest.toneHz * 0.03) ? nearest.name : null;
}

const matched = new Set();

/** The oldest unmatched generation in the ledger with this voice and (about) this length: what was probably said. */
function generationFor(voice, durationMs) {
  const ledger = state?.service.ledger ?? [];
  for (let i = ledger.length - 1; i >= 0; i--) {
    const row = ledger[i];
    if (row.status !== 200 || row.speaker !== voice || matched.has(row.requestId)) continue;
    if (Math.abs(row.audioMs - durationMs) > 80) continue;
    matched.add(row.requestId);
    return row;
  }
  return null;
}

function addToTimeline(at, segment) {
  const voice = voiceFor(segment.hz);
  const said = voice ? generationFor(voice, segment.durationMs) : null;
  const item = el(
    'li',
    { 'data-hz': segment.hz.toFixed(1), 'data-ms': segment.durationMs.toFixed(0), 'data-voice': voice ?? '' },
    `${new Date(at).toLocaleTimeString()} Herald · ${voice ? `${voice}, ` : ''}${Math.round(segment.hz)} Hz · ${(segment.durationMs / 1000).toFixed(2)} s`,
    said ? el('div', { class: 'muted' }, `“${said.text}”`) : null,
  );
  $('timeline').prepend(item);
}

connect();
