/**
 * The patches in `patches/` are written for one version of each package (`<package>+<version>+<NNN>+<name>.patch`,
 * patch-package's names). `node scripts/patch-versions.ts` says whether the installed packages are those versions;
 * `test/patches/versions.test.ts` fails when they are not, so an upgrade never runs on patches written for another
 * release without someone re-checking them (patches/README.md, "Upgrading @discordjs/voice").
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One package the patches were written for, and what is installed. */
export interface PatchedPackage {
  /** `@discordjs/voice`. */
  readonly name: string;
  /** The version in the patch files' names. */
  readonly patchedFor: string;
  /** The version in `node_modules/<name>/package.json`; undefined when it is not installed. */
  readonly installed: string | undefined;
  /** The patch files written for it, in order. */
  readonly patches: readonly string[];
}

// patch-package's file name: the package (a scope's slash written as `+`), its version, then our sequence and name.
const PATCH_NAME = /^(@[^+]+\+[^+]+|[^@+][^+]*)\+(\d+\.\d+\.\d+[^+]*)\+(.+)\.patch$/;

/**
 * Each package the patches under `root/patches` were written for, with the version installed under
 * `root/node_modules`.
 * @throws when two patches of one package name different versions, or a patch's name cannot be read.
 */
export function patchedPackages(root: string): PatchedPackage[] {
  const byName = new Map<string, { patchedFor: string; patches: string[] }>();
  for (const file of readdirSync(join(root, 'patches'))
    .filter((f) => f.endsWith('.patch'))
    .sort()) {
    const match = PATCH_NAME.exec(file);
    if (!match?.[1] || !match[2])
      throw new Error(`The patch ${file} is not named <package>+<version>+<name>.patch.`);
    const name = match[1].replace('+', '/');
    const seen = byName.get(name);
    if (seen && seen.patchedFor !== match[2]) {
      throw new Error(`The patches of ${name} name two versions: ${seen.patchedFor} and ${match[2]}.`);
    }
    if (seen) seen.patches.push(file);
    else byName.set(name, { patchedFor: match[2], patches: [file] });
  }
  return [...byName].map(([name, { patchedFor, patches }]) => {
    const manifest = join(root, 'node_modules', name, 'package.json');
    const installed = existsSync(manifest)
      ? String((JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown }).version)
      : undefined;
    return { name, patchedFor, installed, patches };
  });
}

/** A sentence for each package whose installed version is not the one its patches were written for. */
export function patchVersionProblems(packages: readonly PatchedPackage[]): string[] {
  return packages
    .filter((pkg) => pkg.installed !== pkg.patchedFor)
    .map(
      (pkg) =>
        `${pkg.name} is ${pkg.installed === undefined ? 'not installed' : `at ${pkg.installed}`}, but its ${pkg.patches.length} patch(es) in patches/ were written for ${pkg.patchedFor}: re-check each one against the new release (does upstream now carry it? does it still apply, and does its test still fail without it?), then rename it for the new version, as patches/README.md says under "Upgrading @discordjs/voice".`,
    );
}

if (import.meta.main) {
  const problems = patchVersionProblems(patchedPackages(join(import.meta.dirname, '..')));
  for (const problem of problems) console.error(problem);
  if (problems.length === 0)
    console.log('The installed packages are the versions the patches were written for.');
  process.exit(problems.length === 0 ? 0 : 1);
}
