/**
 * `delivery`: the command line for people and scripts. Readable tables by default, `--json` for
 * scripts, and exit codes scripts can rely on:
 *   0 done · 1 unexpected error · 2 bad usage or invalid input · 3 no such delivery ·
 *   4 refused (by the provider or the workflow: bad key, rejected update, quote not approved) ·
 *   5 unavailable (Temporal or the provider cannot be reached)
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
import { ProviderClient } from '../provider/client';
import { isProviderError } from '../provider/errors';
import { formatMoney } from '../provider/money';
import { forbiddenReferenceCharacter, ReferenceNumber } from '../provider/schemas';
import { fieldIssues } from '../provider/validation';
import type { DeliveryState, TimelineEntry } from '../contract/delivery-types';
import { ACCOUNT_ID, ACCOUNT_ID_RULE } from '../contract/accounts';
import { startAccount } from '../contract/workflow-ids';
import { DEFAULT_START_CHECK_TIMEOUT_MS, DeliveryClient, DeliveryNotFoundError, DeliveryRequestRejectedError, InvalidInputError } from './delivery-client';

export const EXIT = { ok: 0, error: 1, usage: 2, notFound: 3, refused: 4, unavailable: 5, unchecked: 6 } as const;

const HELP = `delivery: start, follow and change deliveries

Usage: delivery <command> [options]

Commands:
  check-key [--account A]             check the account's API key with the courier, read as the
                                      worker reads it: its entry in DELIVERY_ACCOUNTS_FILE (key
                                      from its file or variable); without a registry, DELIVERY_API_KEY
  quote    --order FILE|-             price an order without creating anything
  create   --reference REF --order FILE|- [--max-price N --currency EUR] [--quote FILE]
                                      (--quote: the JSON of \`quote --json\` for this order: no second quote)
           [--approval-timeout SECONDS] [--watch]
           [--notify-endpoint NAME] [--notify-workflow ID [--notify-signal NAME]]
                                      start a delivery (the same reference never makes a second);
                                      --notify-*: push every change to an endpoint the operator
                                      configured (by name) or signal an order workflow
  status   REF                        the delivery's current state
  watch    REF                        live progress until the delivery ends (--json: one line per change)
  update   REF --patch FILE|-         change a delivery (while CREATED or ASSIGNED)
  approve  REF                        approve a quote that is over the maximum price
  reject   REF [--reason TEXT]        reject such a quote; nothing is created
  cancel   REF [--no-wait]            cancel the delivery
  list     [--status S] [--account A] [--limit N]
                                      deliveries, open ones first, then ended, as Temporal's
                                      visibility lists them; --status finds deliveries in S,
                                      open or ended (only ended ones with the worker's
                                      DELIVERY_STATUS_SEARCH=final); --account: that account's only

Options:
  --account A   the courier account of the delivery (default: DELIVERY_ACCOUNT, else \`default\`);
                a reference is unique within its account; a start or a quote for an account
                the workers do not serve is refused (exit 2) and leaves no delivery open
  --check-timeout S  how long create waits for a worker to check the start (default 10);
                none did: started unchecked, exit 6 (watch it: it refuses itself if it must)
  --json        machine-readable output
  -h, --help    this help

Order and patch files are JSON in the provider's format (see docs/openapi.json); "-" reads stdin.
Exit codes: 0 done, 1 unexpected error, 2 bad usage or input, 3 no such delivery,
4 refused, 5 unavailable, 6 started but no worker checked it in time.
`;

class UsageError extends Error {}

const REFERENCE_COMMANDS = ['status', 'watch', 'update', 'approve', 'reject', 'cancel'];

function checkReference(reference: string): void {
  const r = ReferenceNumber.safeParse(reference);
  if (!r.success) throw new InvalidInputError('reference', fieldIssues(r.error).map((i) => ({ ...i, field: 'reference' })));
}

/**
 * Text from Temporal shown to a person: a workflow ID started by another client may hold control
 * characters (an escape sequence for the terminal, a newline that forges a table row). Each is
 * shown as its code point instead.
 */
export function printable(text: string): string {
  let out = '';
  for (const ch of text) out += forbiddenReferenceCharacter(ch) ? `\\u{${ch.codePointAt(0)!.toString(16)}}` : ch;
  return out;
}

interface Out {
  json: boolean;
  print(value: unknown, human: () => string): void;
  line(text: string): void;
}

export async function main(argv: string[], io = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }): Promise<number> {
  // A reader that stops early (`delivery watch --json | head`): the command ends quietly, as Unix tools do.
  if (io.stdout === process.stdout) process.stdout.on('error', endOnClosedPipe);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        order: { type: 'string' },
        patch: { type: 'string' },
        quote: { type: 'string' },
        reference: { type: 'string' },
        'max-price': { type: 'string' },
        currency: { type: 'string', default: 'EUR' },
        'approval-timeout': { type: 'string' },
        watch: { type: 'boolean', default: false },
        'notify-endpoint': { type: 'string' },
        'notify-workflow': { type: 'string' },
        'notify-signal': { type: 'string' },
        reason: { type: 'string' },
        'no-wait': { type: 'boolean', default: false },
        status: { type: 'string' },
        limit: { type: 'string' },
        account: { type: 'string' },
        'check-timeout': { type: 'string' },
      },
    });
  } catch (err) {
    io.stderr.write(`delivery: ${(err as Error).message}\n\n${HELP}`);
    return EXIT.usage;
  }
  const { values: v, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (v.help || !command) {
    (v.help ? io.stdout : io.stderr).write(HELP);
    return v.help ? EXIT.ok : EXIT.usage;
  }
  const out: Out = {
    json: v.json,
    print(value, human) {
      io.stdout.write(this.json ? JSON.stringify(value, null, 2) + '\n' : human() + '\n');
    },
    line(text) {
      io.stdout.write(text + '\n');
    },
  };

  let client: DeliveryClient | undefined;
  try {
    const refArg = () => {
      if (!rest[0]) throw new UsageError(`${command} needs a delivery reference`);
      return rest[0];
    };
    const readJson = (flag: 'order' | 'patch' | 'quote'): unknown => {
      const source = v[flag];
      if (!source) throw new UsageError(`${command} needs --${flag} FILE (or - for stdin)`);
      const text = source === '-' ? readFileSync(0, 'utf8') : readFileSync(source, 'utf8');
      try {
        return JSON.parse(text);
      } catch (err) {
        throw new InvalidInputError(flag, [{ field: '(file)', message: `is not valid JSON (${(err as Error).message})` }]);
      }
    };
    const knownCommands = ['check-key', 'quote', 'create', 'status', 'watch', 'update', 'approve', 'reject', 'cancel', 'list'];
    if (!knownCommands.includes(command)) throw new UsageError(`unknown command ${command}`);
    // A bad reference is bad input whether or not Temporal can be reached: refused before connecting.
    const reference = command === 'create' ? v.reference : REFERENCE_COMMANDS.includes(command) ? rest[0] : undefined;
    if (reference !== undefined) checkReference(reference);
    const account = v.account ?? (process.env.DELIVERY_ACCOUNT || undefined);
    if (account !== undefined && !ACCOUNT_ID.test(account)) throw new InvalidInputError('account', [{ field: v.account !== undefined ? '--account' : 'DELIVERY_ACCOUNT', message: ACCOUNT_ID_RULE }]);

    if (command === 'check-key') return await checkAccountKey(startAccount({ account }), out);

    const checkTimeoutS = v['check-timeout'] === undefined ? undefined : integer(v['check-timeout'], '--check-timeout');
    if (checkTimeoutS === 0) throw new InvalidInputError('option', [{ field: '--check-timeout', message: 'must be at least 1 (seconds)' }]);
    client = await DeliveryClient.connect({ account, ...(checkTimeoutS !== undefined && { startCheckTimeoutMs: checkTimeoutS * 1000 }) });
    switch (command) {
      case 'quote': {
        const q = await client.quote(readJson('order') as never);
        out.print(q, () => `price ${formatMoney(q.price)}, valid until ${q.expires_at}`);
        return EXIT.ok;
      }
      case 'create': {
        if (!v.reference) throw new UsageError('create needs --reference REF');
        const maxPrice = v['max-price'] === undefined ? undefined : { amount: integer(v['max-price'], '--max-price'), currency: v.currency };
        const approvalTimeoutMs = v['approval-timeout'] === undefined ? undefined : integer(v['approval-timeout'], '--approval-timeout') * 1000;
        const quote = v.quote === undefined ? undefined : (readJson('quote') as never);
        const notifyGiven = v['notify-endpoint'] !== undefined || v['notify-workflow'] !== undefined || v['notify-signal'] !== undefined;
        const notify = notifyGiven ? { endpoint: v['notify-endpoint'], workflowId: v['notify-workflow'], signal: v['notify-signal'] } : undefined;
        const started = await client.startDelivery(readJson('order') as never, { reference: v.reference, maxPrice, approvalTimeoutMs, quote, notify });
        if (!v.watch) {
          out.print(started, () =>
            started.alreadyStarted
              ? `a delivery with reference ${started.reference} exists already (${started.workflowId}); nothing new was started`
              : `started ${started.workflowId}${started.checked ? '' : ` (no worker checked it within ${checkTimeoutS ?? DEFAULT_START_CHECK_TIMEOUT_MS / 1000} s: it refuses itself if it must; exit 6)`}; follow it with: delivery watch ${started.reference} --account ${started.account}`,
          );
          // Started, but not known to be accepted: a script must not take it for done.
          return started.alreadyStarted || started.checked ? EXIT.ok : EXIT.unchecked;
        }
        return await watch(client, started.reference, out, io.stderr);
      }
      case 'status': {
        const ref = refArg();
        const s = await client.getStatus(ref);
        const traceId = await client.traceId(ref);
        out.print({ ...s, traceId }, () => renderState(s, traceId ?? '- (started without tracing)'));
        return EXIT.ok;
      }
      case 'watch':
        return await watch(client, refArg(), out, io.stderr);
      case 'update': {
        const s = await client.updateDelivery(refArg(), readJson('patch') as never);
        out.print(s, () => `updated.\n${renderState(s)}`);
        return EXIT.ok;
      }
      case 'approve': {
        const s = await client.approveQuote(refArg());
        out.print(s, () => `quote approved; the delivery is being created.`);
        return EXIT.ok;
      }
      case 'reject': {
        const s = await client.rejectQuote(refArg(), v.reason);
        out.print(s, () => `quote rejected; nothing will be created.`);
        return EXIT.ok;
      }
      case 'cancel': {
        const s = await client.cancelDelivery(refArg(), { wait: !v['no-wait'] });
        out.print(s, () => renderCancellation(s));
        return s.cancellation?.outcome === 'refused' ? EXIT.refused : EXIT.ok;
      }
      case 'list': {
        // Every account's unless --account names one (DELIVERY_ACCOUNT is the account of a delivery's commands, not a filter).
        const rows = await client.list({ status: v.status, account: v.account, limit: v.limit ? integer(v.limit, '--limit') : undefined });
        out.print(rows, () =>
          table(
            ['REFERENCE', 'ACCOUNT', 'STATUS', 'WORKFLOW', 'PROVIDER ID', 'STARTED'],
            rows.map((r) => [r.reference, r.account, r.deliveryStatus ?? '-', r.workflowStatus, r.deliveryId ?? '-', r.startTime.toISOString()]),
          ),
        );
        return EXIT.ok;
      }
    }
    return EXIT.usage;
  } catch (err) {
    return report(err, io.stderr, v.json);
  } finally {
    await client?.close().catch(() => undefined);
  }
}

/**
 * The account's key as the worker reads it (accounts/registry.ts: the registry file's entry and
 * its key's file or variable; without a file, the environment's `default`), tried on the courier.
 * Reads the key on this machine: run it where the worker's files and variables are.
 */
async function checkAccountKey(id: string, out: Out): Promise<number> {
  let registry: ReturnType<ReturnType<typeof workerRegistry>['accountRegistryFromEnv']>;
  try {
    registry = workerRegistry().accountRegistryFromEnv(process.env, { watch: false });
  } catch (err) {
    // A registry the worker would refuse too (an unset variable, a missing file): the operator's input, exit 2.
    throw new InvalidInputError('registry', [{ field: 'DELIVERY_ACCOUNTS_FILE', message: (err as Error).message }]);
  }
  try {
    const account = registry.get(id);
    if (!account) {
      const where = registry.source === 'environment' ? 'this environment (without DELIVERY_ACCOUNTS_FILE it has only `default`)' : `the registry ${registry.source}`;
      throw new InvalidInputError('account', [{ field: 'account', message: `no courier account ${id} in ${where}` }]);
    }
    const provider = new ProviderClient({ baseUrl: account.baseUrl, apiKey: () => account.apiKey(), timeoutMs: 10_000 });
    try {
      await provider.checkKey();
    } catch (err) {
      if (isProviderError(err) && err.kind === 'unauthorized') {
        const from = registry.source === 'environment' ? 'DELIVERY_API_KEY' : `its apiKey in ${registry.source}`;
        throw new DeliveryRequestRejectedError(`the courier rejected the API key of account ${id} (${from})`, 'ProviderUnauthorized');
      }
      throw err;
    } finally {
      await provider.close();
    }
    const r = { valid: true, account: id, baseUrl: account.baseUrl, registry: registry.source };
    out.print(r, () => `the API key of account ${id} (${registry.source}) is valid for ${account.baseUrl}`);
    return EXIT.ok;
  } finally {
    registry.close();
  }
}

/** What check-key uses of the worker's registry reader (accounts/registry.ts). */
interface RegistryReader {
  accountRegistryFromEnv(env: NodeJS.ProcessEnv, o: { watch: boolean }): { source: string; get(id: string): { baseUrl: string; apiKey(): string } | undefined; close(): void };
}

/**
 * The worker's own registry reader, loaded by path at run time: the installed client package
 * holds no worker-side code (tsc leaves this module out of it), so there check-key says where to run it.
 */
function workerRegistry(): RegistryReader {
  try {
    return createRequire(__filename)('../accounts/registry') as RegistryReader;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw err;
    throw new UsageError("check-key reads the worker's account registry and key files: run it where the worker runs (its image or this repository), not from the installed client package");
  }
}

/** Human output: changes on stderr as they happen, the final state on stdout. `--json`: one
 * line per change (`{"change":...}`) and a last line with the final state (`{"final":...}`). */
async function watch(client: DeliveryClient, reference: string, out: Out, stderr: NodeJS.WritableStream): Promise<number> {
  let last: DeliveryState | undefined;
  for await (const { state, changes } of client.watch(reference)) {
    last = state;
    for (const c of changes) {
      if (out.json) out.line(JSON.stringify({ change: c }));
      else stderr.write(`${renderEntry(c)}\n`);
    }
  }
  if (!last) return EXIT.notFound;
  if (out.json) out.line(JSON.stringify({ final: last }));
  else out.line(`\n${renderState(last)}`);
  return EXIT.ok;
}

function report(err: unknown, stderr: NodeJS.WritableStream, json: boolean): number {
  const [code, message] = classify(err);
  if (json) stderr.write(JSON.stringify({ error: { code, message, ...(err instanceof InvalidInputError ? { details: err.issues } : {}) } }) + '\n');
  else stderr.write(`delivery: ${message}\n`);
  return code;
}

function classify(err: unknown): [number, string] {
  if (err instanceof UsageError) return [EXIT.usage, `${err.message} (see delivery --help)`];
  if (err instanceof InvalidInputError) return [EXIT.usage, err.message];
  if (err instanceof DeliveryNotFoundError) return [EXIT.notFound, err.message];
  if (err instanceof DeliveryRequestRejectedError) return [EXIT.refused, err.message];
  if (isProviderError(err)) {
    if (err.kind === 'unauthorized') return [EXIT.refused, 'the provider rejected the API key (check DELIVERY_API_KEY)'];
    if (err.kind === 'unavailable') return [EXIT.unavailable, `the provider is unavailable: ${err.message}`];
    return [EXIT.refused, err.message];
  }
  const e = err as Error & { code?: string };
  if (e?.name === 'ServiceError' || e?.name === 'TransportError' || /connect|ECONNREFUSED|UNAVAILABLE|deadline/i.test(e?.message ?? '')) {
    return [EXIT.unavailable, `Temporal is unavailable (${e.message}); is the local stack running (npm start)?`];
  }
  if ((err as NodeJS.ErrnoException)?.code === 'ENOENT') return [EXIT.usage, e.message];
  return [EXIT.error, e?.message ?? String(err)];
}

function integer(text: string, flag: string): number {
  if (!/^\d+$/.test(text)) throw new InvalidInputError('option', [{ field: flag, message: 'must be a whole number' }]);
  return Number(text);
}

/** `trace`: the trace id line of `delivery status` (docs/monitoring.md, "A delivery's trace"). */
export function renderState(s: DeliveryState, trace?: string): string {
  const lines = [
    `reference   ${printable(s.reference)}`,
    `status      ${s.status ?? '-'} (${s.phase})`,
    `provider id ${s.deliveryId ?? '-'}`,
    `price       ${s.price ? formatMoney(s.price) : s.quote ? `quoted ${formatMoney(s.quote.price)}` : '-'}`,
    ...(trace === undefined ? [] : [`trace       ${trace}`]),
  ];
  if (s.cancellation) lines.push(`cancel      ${renderCancellation(s)}`);
  // A start the workflow refused ends with no status: its last note says why.
  const why = s.phase === 'ended' && s.status === undefined ? s.timeline.at(-1)?.note : undefined;
  if (why) lines.push(`ended       ${printable(why)}`);
  if (s.destinations.length > 0) {
    lines.push('', table(['DESTINATION', 'STATUS', 'WINDOW', 'TRACKING'], s.destinations.map((d) => [d.id, d.status, `${d.timeWindowStart} – ${d.timeWindowEnd}`, d.trackingUrl])));
  }
  return lines.join('\n');
}

function renderCancellation(s: DeliveryState): string {
  switch (s.cancellation?.outcome) {
    case 'before_creation':
      return 'cancelled before creation: nothing was created';
    case 'cancelled':
      return 'cancelled at the provider';
    case 'refused':
      return `the provider refused to cancel (${s.cancellation.reason}); the delivery is followed to its end`;
    default:
      return `cancellation requested; the delivery is ${s.status ?? s.phase}`;
  }
}

function renderEntry(e: TimelineEntry): string {
  const what = e.status ? `${e.subject === 'delivery' ? 'delivery' : `destination ${e.subject}`} → ${e.status}` : e.note;
  const origin = e.source === 'workflow' ? '' : `  (${e.source}${e.late ? ', late: the status did not move back' : ''})`;
  return `${e.at}  ${what}${origin}`;
}

function endOnClosedPipe(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EPIPE') throw err;
  process.exit(EXIT.ok);
}

function table(headers: string[], rows: string[][]): string {
  if (rows.length === 0) return '(none)';
  rows = rows.map((r) => r.map(printable));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

if (require.main === module) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
