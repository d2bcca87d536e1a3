import { describe, expect, it } from 'vitest';
import {
  assertNoSecret,
  assertNoSecretInJson,
  redactJson,
  redactSecrets,
} from './redact-secrets.js';

describe('redactSecrets', () => {
  const cases: [string, string, string][] = [
    [
      'anthropic-api-key',
      'key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 here',
      'sk-ant-api03',
    ],
    ['openai-api-key', 'OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz123456', 'sk-proj-abc'],
    ['github-token', 'push with ghp_abcdefghijklmnopqrstuvwxyz0123456789AB', 'ghp_abc'],
    ['aws-access-key-id', 'AKIAIOSFODNN7EXAMPLE is the id', 'AKIAIOSFODNN7EXAMPLE'],
    ['slack-token', 'xoxb-123456789012-abcdefghijkl', 'xoxb-1234'],
    ['bearer-token', 'curl -H "Authorization: Bearer abcdef0123456789abcdef"', 'abcdef0123456789'],
    ['url-password', 'postgres://app:hunter2secret@db.local:5432/app', 'hunter2secret'],
    ['secret-assignment', 'export DB_PASSWORD=correcthorsebattery', 'correcthorsebattery'],
    ['secret-assignment', 'api_key: "zzzz1111yyyy2222"', 'zzzz1111yyyy2222'],
    // A password is one however short; docs/api.md says `password=` assignments go.
    ['secret-assignment', 'login with password=hunter2 today', 'hunter2'],
    ['secret-assignment', 'password: "pa55"', 'pa55'],
    ['ctxbus-token', 'token cbx_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'cbx_AAAA'],
    [
      'jwt',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'eyJhbGciOiJIUzI1NiJ9',
    ],
    ['telegram-bot-token', 'bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 ok', 'AAHdqTcv'],
  ];

  it.each(cases)('redacts a %s', (kind, text, secret) => {
    const result = redactSecrets(text, 'content');
    expect(result.text).not.toContain(secret);
    expect(result.text).toContain(`[REDACTED:${kind}]`);
    expect(result.redactions).toContainEqual({ field: 'content', kind, count: 1 });
  });

  it('redacts a PEM private key block whole', () => {
    const pem = [
      'before',
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
      '-----END OPENSSH PRIVATE KEY-----',
      'after',
    ].join('\n');
    const result = redactSecrets(pem, 'content');
    expect(result.text).toBe('before\n[REDACTED:private-key]\nafter');
  });

  it('keeps the text around a secret and counts repeats', () => {
    const result = redactSecrets(
      'a Bearer 0123456789abcdefXYZ b Bearer 0123456789abcdefXYZ c',
      'x',
    );
    expect(result.text).toBe('a Bearer [REDACTED:bearer-token] b Bearer [REDACTED:bearer-token] c');
    expect(result.redactions).toEqual([{ field: 'x', kind: 'bearer-token', count: 2 }]);
  });

  it('finds secrets where its linear-time patterns start', () => {
    const redacted = (text: string) => redactSecrets(text, 'content').text;
    // An assignment is found from its key word on; the rest of the name stays.
    expect(redacted('my_service_api_key = "s3cr3tv4lue99"')).toBe(
      'my_service_api_key = "[REDACTED:secret-assignment]"',
    );
    expect(redacted('DB_PASSWORD: hunter2hunter2')).toBe(
      'DB_PASSWORD: [REDACTED:secret-assignment]',
    );
    // `pass` alone is a password's name too (found by the jail probe); inside a word it is not.
    expect(redacted('DB_PASS: hunter2')).toBe('DB_PASS: [REDACTED:secret-assignment]');
    expect(redacted('export SMTP_PASS="s3cret!"')).toBe(
      'export SMTP_PASS="[REDACTED:secret-assignment]"',
    );
    expect(redacted('gpg passphrase=long horse')).toBe(
      'gpg passphrase=[REDACTED:secret-assignment] horse',
    );
    expect(redacted('bypass: enabled; compass=north')).toBe('bypass: enabled; compass=north');
    // And the forms the second jail probe found stored in clear.
    expect(redacted('aws secret_key=wJalrXUtnFEMIK7MDENG')).toBe(
      'aws secret_key=[REDACTED:secret-assignment]',
    );
    expect(redacted('pass_phrase=open-sesame')).toBe('pass_phrase=[REDACTED:secret-assignment]');
    expect(redacted('mysql --password hunter2 -h db')).toBe(
      'mysql --password [REDACTED:secret-assignment] -h db',
    );
    expect(redacted('sshpass -p hunter2 ssh host')).toBe(
      'sshpass -p [REDACTED:secret-assignment] ssh host',
    );
    expect(redacted('<password>hunter2</password>')).toBe(
      '<password>[REDACTED:secret-assignment]</password>',
    );
    expect(redacted('Passphrase: "hunter2 mm with spaces" ok')).toBe(
      'Passphrase: "[REDACTED:secret-assignment]" ok',
    );
    // And the forms the isolation probe found stored in clear.
    expect(redacted('curl -u admin:Curlpw_9x8y https://x')).toBe(
      'curl -u admin:[REDACTED:secret-assignment] https://x',
    );
    expect(redacted('curl --user=admin:Basicpw9 x')).toBe(
      'curl --user=admin:[REDACTED:secret-assignment] x',
    );
    expect(redacted('mysql -h db -u app -pMysqlpw_77 shop')).toBe(
      'mysql -h db -u app -p[REDACTED:secret-assignment] shop',
    );
    expect(redacted('the password is Spacepw_1a2b, do not share')).toBe(
      'the password is [REDACTED:secret-assignment], do not share',
    );
    expect(redacted('docker run -u 1000:1000 img; the password is rotated weekly')).toBe(
      'docker run -u 1000:1000 img; the password is rotated weekly',
    );
    // Not secrets: an option with no value, a word in prose.
    expect(redacted('use --password to be asked; the token: none')).toBe(
      'use --password to be asked; the token: none',
    );
    // URL schemes of up to 32 characters; longer ones are not schemes.
    expect(redacted('mongodb+srv://app:pa55word@db.example')).toBe(
      'mongodb+srv://app:[REDACTED:url-password]@db.example',
    );
    expect(redacted(`${'s'.repeat(40)}://app:pa55word@db.example`)).toContain('pa55word');
    // A JWT where a run of token characters starts: after a space, a dot, a quote, `=`.
    const jwt =
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    for (const before of [' ', '.', '"', '=', ':']) {
      expect(redacted(`x${before}${jwt}`)).toBe(`x${before}[REDACTED:jwt]`);
    }
    // Text built to make a pattern start at every word boundary of a long run: nothing found.
    for (const run of ['a-'.repeat(20_000), 'a.'.repeat(20_000), 'eyJ-'.repeat(10_000)]) {
      expect(redactSecrets(run, 'content')).toEqual({ text: run, redactions: [] });
    }
  });

  it('refuses a secret an argv holds across two words, read as the line it makes', () => {
    for (const argv of [
      ['curl', '-u', 'admin:Curlpw_9x8y', 'https://x'],
      ['mysql', '-u', 'app', '-pMysqlpw_77', 'shop'],
    ]) {
      expect(() => assertNoSecretInJson({ argv }, 'input', 'use the environment')).toThrow(
        /^input\.argv: looks like a secret \(secret-assignment\)/,
      );
    }
    expect(() =>
      assertNoSecretInJson({ argv: ['docker', 'run', '-u', '1000:1000', 'img'] }, 'input', 'x'),
    ).not.toThrow();
  });

  it('refuses a secret in an identifier (never rewritten), naming the field and the kind', () => {
    expect(() =>
      assertNoSecret('deploy/ghp_abcdefghijklmnopqrstuvwxyz0123456789AB', 'key'),
    ).toThrow(/^key: looks like a secret \(github-token\); identifiers are stored as given/);
    expect(() => assertNoSecret('project/db', 'key')).not.toThrow();
    expect(() =>
      assertNoSecretInJson(
        { argv: ['curl', '-H', 'Authorization: Bearer abcdef0123456789abcdef'] },
        'input',
        'give it through the environment',
      ),
    ).toThrow(/^input\.argv\[2\]: looks like a secret \(bearer-token\); give it/);
  });

  it("leaves the shell's working directory alone (PWD=/path is env output, not a password)", () => {
    const env = 'HOME=/home/dev\nPWD=/tmp/h4/projects/app\nOLDPWD=/home/dev\nDB_PWD=s3cr3tpw';
    const result = redactSecrets(env, 'stdout');
    expect(result.text).toBe(
      'HOME=/home/dev\nPWD=/tmp/h4/projects/app\nOLDPWD=/home/dev\nDB_PWD=[REDACTED:secret-assignment]',
    );
  });

  it('leaves ordinary prose alone', () => {
    const prose =
      'We decided to use SQLite with WAL mode. The token budget is 4000 tokens; password rules are documented. See https://example.com/docs.';
    expect(redactSecrets(prose, 'content')).toEqual({ text: prose, redactions: [] });
  });

  it('is idempotent', () => {
    const once = redactSecrets('password=abcdefgh12345 and sk-ant-xxxxxxxxxxxxxxxxxxxxxxxx', 'c');
    const twice = redactSecrets(once.text, 'c');
    expect(twice).toEqual({ text: once.text, redactions: [] });
  });

  it('redacts inside JSON values and secret-named fields', () => {
    const result = redactJson(
      { openclaw: { password: 'short1', note: 'use ghp_abcdefghijklmnopqrstuvwxyz0123456789AB' } },
      'runtimeOptions',
    );
    expect(result.value).toEqual({
      openclaw: { password: '[REDACTED:secret-field]', note: 'use [REDACTED:github-token]' },
    });
    expect(result.redactions).toHaveLength(2);
  });
});
