/**
 * The installable client (packages/client) declares exactly the runtime dependencies its code
 * imports, at the versions this repository is built and tested with. tsc decides what the package
 * contains (the imports reached from client/index.ts and client/cli.ts), so an import added to
 * client/, contract/, provider/ or temporal/ changes the package: this test names the dependency
 * to add (or the one no longer used) before an order system meets a missing module.
 */
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import ts from 'typescript';

const REPO = join(__dirname, '../..');
const PACKAGE_DIR = join(REPO, 'packages/client');
type Manifest = { dependencies?: Record<string, string>; devDependencies?: Record<string, string>; bin?: Record<string, string>; exports?: unknown; private?: boolean };
const manifest = (dir: string) => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

function packageBuild(): ts.Program {
  const configFile = join(PACKAGE_DIR, 'tsconfig.json');
  const { config } = ts.readConfigFile(configFile, ts.sys.readFile);
  const parsed = ts.parseJsonConfigFileContent(config, ts.sys, PACKAGE_DIR, undefined, configFile);
  return ts.createProgram(parsed.fileNames, parsed.options);
}

/** The packages the built files import at run time (type-only imports are erased and do not count). */
function runtimeImports(program: ts.Program): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const sf of program.getSourceFiles()) {
    if (sf.isDeclarationFile) continue;
    const add = (specifier: string) => {
      if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier)) return;
      const name = specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');
      found.set(name, [...(found.get(name) ?? []), relative(REPO, sf.fileName)]);
    };
    for (const st of sf.statements) {
      if (ts.isImportDeclaration(st) && !st.importClause?.isTypeOnly && ts.isStringLiteral(st.moduleSpecifier)) {
        const named = st.importClause?.namedBindings;
        const allTypes = !st.importClause?.name && named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
        if (st.importClause === undefined || !allTypes) add(st.moduleSpecifier.text);
      } else if (ts.isExportDeclaration(st) && !st.isTypeOnly && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier)) {
        add(st.moduleSpecifier.text);
      }
    }
  }
  return found;
}

describe('the client package', () => {
  const program = packageBuild();

  it('builds from the client entry points without errors', () => {
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(diagnostics).toEqual([]);
  });

  it('contains the client and what it imports, none of the worker, bridge or simulator', () => {
    const files = program
      .getSourceFiles()
      .filter((sf) => !sf.isDeclarationFile)
      .map((sf) => relative(REPO, sf.fileName));
    expect(files).toEqual(expect.arrayContaining(['client/index.ts', 'client/cli.ts', 'client/delivery-client.ts', 'temporal/failure-converter.ts']));
    expect(files.filter((f) => /^(worker|bridge|simulator|activities|scripts|test|bench)\//.test(f))).toEqual([]);
  });

  it('declares exactly the dependencies its code imports, at the ranges of the root package', () => {
    const imports = runtimeImports(program);
    const pkg = manifest(PACKAGE_DIR);
    const root = manifest(REPO);
    const declared = Object.keys(pkg.dependencies ?? {}).sort();
    const missing = [...imports.keys()].filter((name) => !declared.includes(name)).map((name) => `${name} (imported by ${imports.get(name)!.join(', ')})`);
    const unused = declared.filter((name) => !imports.has(name));
    expect({ missing, unused }).toEqual({ missing: [], unused: [] });
    for (const name of declared) expect([name, pkg.dependencies![name]]).toEqual([name, root.dependencies?.[name]]);
  });

  it('is installable: not private, with exports for the library and types, and the delivery command', () => {
    const pkg = manifest(PACKAGE_DIR);
    expect(pkg.private).toBeUndefined();
    expect(pkg.exports).toEqual({ '.': { types: './dist/client/index.d.ts', default: './dist/client/index.js' }, './package.json': './package.json' });
    expect(pkg.bin).toEqual({ delivery: 'bin/delivery.js' });
    expect(pkg.devDependencies).toBeUndefined();
  });
});
