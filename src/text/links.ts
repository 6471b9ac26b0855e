import { domainToUnicode } from 'node:url';

/** How a URL is spoken: "a link", or "a link to example.com" when `withDomain` and the host is plainly speakable. */
export function describeLink(url: string, withDomain: boolean): string {
  if (!withDomain) return 'a link';
  const domain = speakableDomain(url);
  return domain === undefined ? 'a link' : `a link to ${domain}`;
}

function speakableDomain(url: string): string | undefined {
  let host: string;
  try {
    host = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `http://${url}`).hostname;
  } catch {
    return undefined;
  }
  const domain = domainToUnicode(host)
    .replace(/^(?:www\.)+/i, '')
    .replace(/\.$/, '');
  // Anything beyond letters, digits, dots and hyphens (IPv6 brackets, a second "www.") is not worth saying.
  if (domain === '' || /www\./i.test(domain) || !/^[\p{L}\p{N}.-]+$/u.test(domain)) return undefined;
  return domain;
}
