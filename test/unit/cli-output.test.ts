import { printable } from '../../client/cli';

describe('text the CLI shows a person', () => {
  it('keeps Unicode references as they are', () => {
    for (const r of ['ORD-€42', '注文-1001', '📦-Müller-7', 'طلب-12']) expect(printable(r)).toBe(r);
  });

  it('shows control characters from a workflow ID as code points: no forged table row, no terminal escape', () => {
    expect(printable('ORD-1\nORD-2  CREATED')).toBe('ORD-1\\u{a}ORD-2  CREATED');
    expect(printable('\u001b[2J\u001b[31mX')).toBe('\\u{1b}[2J\\u{1b}[31mX');
    expect(printable('A\u202eB\u2028C\u0085D\ud800')).toBe('A\\u{202e}B\\u{2028}C\\u{85}D\\u{d800}');
  });
});
