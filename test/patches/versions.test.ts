import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { patchedPackages, patchVersionProblems } from '../../scripts/patch-versions.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** A project folder with `patches` and an installed `@discordjs/voice` at `installed`. */
function project(patches: readonly string[], installed: string | undefined): string {
  const root = mkdtempSync(join(tmpdir(), 'herald-patches-'));
  mkdirSync(join(root, 'patches'));
  for (const patch of patches) writeFileSync(join(root, 'patches', patch), '');
  if (installed !== undefined) {
    mkdirSync(join(root, 'node_modules', '@discordjs', 'voice'), { recursive: true });
    writeFileSync(
      join(root, 'node_modules', '@discordjs', 'voice', 'package.json'),
      JSON.stringify({ name: '@discordjs/voice', version: installed }),
    );
  }
  folders.push(root);
  return root;
}
const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const VOICE_PATCHES = ['@discordjs+voice+0.19.2+001+a.patch', '@discordjs+voice+0.19.2+002+b.patch'];

describe('the patches’ versions', () => {
  it('match what is installed here: the patches in patches/ were written for these releases', () => {
    const packages = patchedPackages(ROOT);
    expect(packages.map((pkg) => pkg.name).sort()).toEqual([
      '@discordjs/rest',
      '@discordjs/voice',
      '@discordjs/ws',
    ]);
    expect(patchVersionProblems(packages)).toEqual([]);
  });

  it('fail, saying what to re-check, when the installed version is another', () => {
    const packages = patchedPackages(project(VOICE_PATCHES, '0.19.3'));
    expect(packages).toEqual([
      { name: '@discordjs/voice', patchedFor: '0.19.2', installed: '0.19.3', patches: VOICE_PATCHES },
    ]);
    const [problem, ...others] = patchVersionProblems(packages);
    expect(others).toEqual([]);
    expect(problem).toContain(
      '@discordjs/voice is at 0.19.3, but its 2 patch(es) in patches/ were written for 0.19.2',
    );
    expect(problem).toContain('re-check each one');
    expect(problem).toContain('Upgrading @discordjs/voice');
  });

  it('pass for the same version, and fail for a package that is not installed', () => {
    expect(patchVersionProblems(patchedPackages(project(VOICE_PATCHES, '0.19.2')))).toEqual([]);
    expect(patchVersionProblems(patchedPackages(project(VOICE_PATCHES, undefined)))).toEqual([
      expect.stringContaining('@discordjs/voice is not installed'),
    ]);
  });

  it('refuse patches of one package written for two versions', () => {
    const root = project(
      ['@discordjs+voice+0.19.2+001+a.patch', '@discordjs+voice+0.20.0+002+b.patch'],
      '0.19.2',
    );
    expect(() => patchedPackages(root)).toThrow('name two versions: 0.19.2 and 0.20.0');
  });
});
