/**
 * For tests of @discordjs/voice's Networking (the patches to it): an instance taken to Ready by Discord's session
 * description, without any socket.
 */
import { Networking, NetworkingStatusCode } from '@discordjs/voice';
import { expect, vi } from 'vitest';

/** Voice gateway op 4, Session Description: the encryption mode and the key. */
const SESSION_DESCRIPTION = 4;

/** A Networking in the Ready state with AES-256-GCM and `secret`, sending as `ssrc`; destroy it after the test. */
export function readyNetworking(o: { readonly secret: Buffer; readonly ssrc: number }): Networking {
  // The endpoint is never reached: the state is replaced before the WebSocket could open.
  const networking = new Networking(
    {
      channelId: '1',
      endpoint: '127.0.0.1:9',
      serverId: '2',
      sessionId: 's',
      token: 't',
      userId: '3',
    },
    { daveEncryption: false, debug: false },
  );
  networking.on('error', () => {});
  const udp = { on() {}, off() {}, destroy() {}, send: vi.fn() };
  const state = networking.state as unknown as Record<string, unknown>;
  networking.state = {
    ...state,
    code: NetworkingStatusCode.SelectingProtocol,
    udp,
    connectionData: { ssrc: o.ssrc, connectedClients: new Set<string>() },
  } as unknown as Networking['state'];
  // The handler is private in the typings; it is what the voice WebSocket calls with Discord's op 4.
  (networking as unknown as { onWsPacket(packet: unknown): void }).onWsPacket({
    op: SESSION_DESCRIPTION,
    d: { mode: 'aead_aes256_gcm_rtpsize', secret_key: [...o.secret], dave_protocol_version: 0 },
  });
  expect(networking.state.code).toBe(NetworkingStatusCode.Ready);
  return networking;
}
