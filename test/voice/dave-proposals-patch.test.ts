import { DAVESession } from '@discordjs/voice';
import Davey from '@snazzah/davey';
import { describe, expect, it } from 'vitest';
import { createExternalSender, externalProposal, vector } from '../../emulators/discord/dave-mls.ts';

// The patch in patches/@discordjs+voice+0.19.2+002+dave-unknown-proposal.patch; see patches/README.md.
const CHANNEL = '1300000000000000001';
const BOT = '1300000000000000002';
const STRANGER = '1300000000000000003';

function appendProposals(messages: Buffer[]): Buffer {
  return Buffer.concat([Buffer.from([0]), vector(Buffer.concat(messages))]);
}

describe('@discordjs/voice DAVESession.processProposals (patched)', () => {
  it('recovers from an Add for a user the gateway never announced instead of throwing', () => {
    const session = new DAVESession(1, BOT, CHANNEL, {});
    const keyPackages: Buffer[] = [];
    const invalidated: number[] = [];
    session.on('keyPackage', (kp: Buffer) => keyPackages.push(kp));
    session.on('invalidateTransition', (id: number) => invalidated.push(id));
    session.reinit();
    const sender = createExternalSender();
    session.setExternalSender(sender.package);
    const stranger = new Davey.DAVESession(1, STRANGER, CHANNEL);
    const add = externalProposal(sender, CHANNEL, 0n, { add: stranger.getSerializedKeyPackage() });

    // Unpatched, davey's UnexpectedUser error escapes here, and from the WebSocket handler ends the process.
    const answer = session.processProposals(appendProposals([add.message]), new Set());

    expect(answer).toBeUndefined();
    expect(invalidated).toEqual([0]);
    expect(keyPackages).toHaveLength(2);
    session.destroy();
    stranger.reset();
  });

  it('still commits proposals for announced users', () => {
    const session = new DAVESession(1, BOT, CHANNEL, {});
    session.reinit();
    const sender = createExternalSender();
    session.setExternalSender(sender.package);
    const member = new Davey.DAVESession(1, STRANGER, CHANNEL);
    const add = externalProposal(sender, CHANNEL, 0n, { add: member.getSerializedKeyPackage() });

    const answer = session.processProposals(appendProposals([add.message]), new Set([STRANGER]));

    expect(answer?.length).toBeGreaterThan(100);
    session.destroy();
    member.reset();
  });
});
