-- dialbox schema, as an ordered list of migrations.
-- Each "-- migration N: ..." block is applied once, in order, in its own
-- transaction; PRAGMA user_version records the last one applied.
-- Never edit a released block: add a new one below.
-- Times are INTEGER unix milliseconds (UTC). Money is INTEGER VND.

-- migration 1: tenants, scenarios, campaigns and contacts
CREATE TABLE applications (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL,
    api_key     TEXT    NOT NULL UNIQUE,
    api_secret  TEXT    NOT NULL,
    disabled    INTEGER NOT NULL DEFAULT 0,
    is_demo     INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE wallets (
    app_id           INTEGER PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
    prepaid          INTEGER NOT NULL DEFAULT 1,
    balance          INTEGER NOT NULL DEFAULT 0,
    expires_at       INTEGER,            -- NULL: never expires
    price_per_call   INTEGER NOT NULL DEFAULT 0,
    price_per_minute INTEGER NOT NULL DEFAULT 0,
    updated_at       INTEGER NOT NULL
);

CREATE TABLE hotline_pools (
    app_id     INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, key)
);

CREATE TABLE hotlines (
    app_id   INTEGER NOT NULL,
    pool_key TEXT    NOT NULL,
    number   TEXT    NOT NULL,
    enabled  INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (app_id, pool_key, number),
    FOREIGN KEY (app_id, pool_key) REFERENCES hotline_pools(app_id, key) ON DELETE CASCADE
);

CREATE TABLE scenarios (
    app_id              INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
    id                  TEXT    NOT NULL,
    name                TEXT    NOT NULL DEFAULT '',
    description         TEXT    NOT NULL DEFAULT '',
    status              TEXT    NOT NULL DEFAULT 'DRAFT'
                        CHECK (status IN ('DRAFT', 'ACTIVE', 'REVIEWING', 'REJECT')),
    content             TEXT    NOT NULL DEFAULT '',
    personalized_fields TEXT    NOT NULL DEFAULT '[]',  -- JSON array of names
    call_config         TEXT    NOT NULL DEFAULT '{}',  -- JSON, see config.go CallConfig
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    PRIMARY KEY (app_id, id)
);
CREATE INDEX scenarios_by_created ON scenarios (app_id, created_at DESC, id);

CREATE TABLE campaigns (
    app_id      INTEGER NOT NULL,
    id          TEXT    NOT NULL,
    name        TEXT    NOT NULL DEFAULT '',
    scenario_id TEXT    NOT NULL,
    paused      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (app_id, id),
    FOREIGN KEY (app_id, scenario_id) REFERENCES scenarios(app_id, id) ON DELETE CASCADE
);

-- One row per accepted request of operation A or C (or a rejected one whose
-- contacts were all invalid), so skipped contacts can be explained later.
CREATE TABLE imports (
    id          TEXT    PRIMARY KEY,
    app_id      INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
    scenario_id TEXT    NOT NULL,
    campaign_id TEXT,
    requested   INTEGER NOT NULL,
    added       INTEGER NOT NULL,
    skipped     INTEGER NOT NULL,
    code        INTEGER NOT NULL,   -- 1 on success, else the error code answered
    created_at  INTEGER NOT NULL
);
CREATE INDEX imports_by_app ON imports (app_id, created_at);

CREATE TABLE skipped_contacts (
    import_id TEXT    NOT NULL REFERENCES imports(id) ON DELETE CASCADE,
    position  INTEGER NOT NULL,   -- index in the request's contacts array
    input     TEXT    NOT NULL,   -- the contact as sent (JSON)
    reason    TEXT    NOT NULL,
    PRIMARY KEY (import_id, position)
) WITHOUT ROWID;

-- state: queued (waiting for its next attempt), dialing (a call is up),
-- done (final outcome reached).
CREATE TABLE contacts (
    seq             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,   -- contact_id (UUIDv7: ordered, cheap to index)
    app_id          INTEGER NOT NULL,
    scenario_id     TEXT    NOT NULL,
    campaign_id     TEXT,
    import_id       TEXT    NOT NULL,
    phone           TEXT    NOT NULL,          -- E.164
    fields          TEXT    NOT NULL,          -- JSON object echoed in responses
    unique_phone    INTEGER NOT NULL,          -- 1 when the scenario forbade duplicates
    state           TEXT    NOT NULL DEFAULT 'queued',
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    outcome         TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    FOREIGN KEY (app_id, scenario_id) REFERENCES scenarios(app_id, id) ON DELETE CASCADE
);
-- A phone may be pending only once per scenario unless duplicates are allowed;
-- the index enforces it inside the import transaction.
CREATE UNIQUE INDEX contacts_pending_phone ON contacts (app_id, scenario_id, phone)
    WHERE unique_phone = 1 AND state <> 'done';
CREATE INDEX contacts_due ON contacts (app_id, scenario_id, next_attempt_at, seq)
    WHERE state = 'queued';
CREATE INDEX contacts_by_app ON contacts (app_id, seq);

-- migration 2: calls and webhook delivery
CREATE TABLE calls (
    id           TEXT    PRIMARY KEY,
    contact_seq  INTEGER NOT NULL REFERENCES contacts(seq) ON DELETE CASCADE,
    app_id       INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    hotline      TEXT    NOT NULL,
    state        TEXT    NOT NULL DEFAULT 'dialing',  -- dialing | ended
    outcome      TEXT,
    cause        INTEGER,
    started_at   INTEGER NOT NULL,
    answered_at  INTEGER,
    ended_at     INTEGER,
    duration     INTEGER NOT NULL DEFAULT 0,          -- talk seconds
    cost         INTEGER NOT NULL DEFAULT 0,
    UNIQUE (contact_seq, attempt)
);
CREATE INDEX calls_dialing ON calls (state) WHERE state = 'dialing';

CREATE TABLE webhook_endpoints (
    id         TEXT    PRIMARY KEY,
    app_id     INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
    url        TEXT    NOT NULL,
    secret     TEXT    NOT NULL,
    events     TEXT    NOT NULL DEFAULT '[]',  -- JSON array; empty means all
    enabled    INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_by_app ON webhook_endpoints (app_id);

-- The outbox: one row per (event, endpoint), written in the same transaction
-- as the state change it reports.
CREATE TABLE webhook_messages (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL UNIQUE,   -- webhook-id header, same on every retry
    endpoint_id  TEXT    NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    app_id       INTEGER NOT NULL,
    event_type   TEXT    NOT NULL,
    payload      TEXT    NOT NULL,
    state        TEXT    NOT NULL DEFAULT 'pending',  -- pending | delivered | dead
    attempts     INTEGER NOT NULL DEFAULT 0,          -- every try ever made
    tries        INTEGER NOT NULL DEFAULT 0,          -- failed tries since (re)queued: index into retry_schedule
    next_try_at  INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX webhook_messages_due ON webhook_messages (next_try_at, seq) WHERE state = 'pending';
CREATE INDEX webhook_messages_by_endpoint ON webhook_messages (endpoint_id, created_at);

CREATE TABLE webhook_attempts (
    message_seq INTEGER NOT NULL REFERENCES webhook_messages(seq) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    status_code INTEGER,
    error       TEXT,
    latency_ms  INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (message_seq, attempt)
) WITHOUT ROWID;

-- migration 3: admin API settings
-- Survives POST /admin/v1/reset: holds the hash of the generated admin token.
CREATE TABLE admin_settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

-- migration 4: a count of each application's unfinished contacts
-- limits.max_queued_contacts reads it instead of counting millions of rows.
-- Triggers keep it exact inside whatever transaction changes contacts
-- (imports, call ends, cascading deletes, the bench's SQL fill), so no code
-- path can forget it and a crash cannot split it from the rows it counts.
CREATE TABLE queued_contacts (
    app_id INTEGER PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
    n      INTEGER NOT NULL   -- contacts in state queued or dialing
);
INSERT INTO queued_contacts (app_id, n)
    SELECT id, (SELECT count(*) FROM contacts c WHERE c.app_id = a.id AND c.state <> 'done') FROM applications a;
CREATE TRIGGER queued_contacts_app AFTER INSERT ON applications BEGIN
    INSERT INTO queued_contacts (app_id, n) VALUES (NEW.id, 0);
END;
CREATE TRIGGER queued_contacts_insert AFTER INSERT ON contacts WHEN NEW.state <> 'done' BEGIN
    UPDATE queued_contacts SET n = n + 1 WHERE app_id = NEW.app_id;
END;
CREATE TRIGGER queued_contacts_state AFTER UPDATE OF state ON contacts
    WHEN (OLD.state = 'done') <> (NEW.state = 'done') BEGIN
    UPDATE queued_contacts SET n = n + CASE NEW.state WHEN 'done' THEN -1 ELSE 1 END WHERE app_id = NEW.app_id;
END;
CREATE TRIGGER queued_contacts_delete AFTER DELETE ON contacts WHEN OLD.state <> 'done' BEGIN
    UPDATE queued_contacts SET n = n - 1 WHERE app_id = OLD.app_id;
END;

-- migration 5: the SIP trunk a hotline pool calls through
-- Empty: the first of sip.trunks (and nothing with the simulated dialer).
ALTER TABLE hotline_pools ADD COLUMN trunk TEXT NOT NULL DEFAULT '';

-- migration 6: voice-bot scripts and what they did on each call
-- A scenario's script is JSON (internal/script), '' for plain content. A
-- call's answered_by is human, machine or unknown; steps is the JSON list of
-- steps taken. Calls ended before this migration read as unknown, nothing
-- pressed, no result, no steps.
ALTER TABLE scenarios ADD COLUMN script TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN answered_by TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE calls ADD COLUMN digits TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN result TEXT NOT NULL DEFAULT '';
ALTER TABLE calls ADD COLUMN steps TEXT NOT NULL DEFAULT '[]';

-- migration 7: calls' recordings
-- recording_bytes is the size of the call's WAV file in recordings.dir
-- (docs/voicebot.md#recordings), 0 when it has none: not recorded, or
-- removed after recordings.retention_days.
ALTER TABLE calls ADD COLUMN recording_bytes INTEGER NOT NULL DEFAULT 0;
CREATE INDEX calls_recorded ON calls (ended_at) WHERE recording_bytes > 0;

-- migration 8: counts the web console reads, and the phone search
-- Contacts per (scenario, campaign, state, outcome) and webhook messages per
-- (endpoint, state), kept exact by triggers inside whatever transaction
-- changes the rows (as queued_contacts is), so the console's counters are
-- a few primary-key reads with millions of contacts stored. The phone
-- index serves the contact search by phone (docs/console.md#contacts).
CREATE TABLE contact_counts (
    app_id      INTEGER NOT NULL,
    scenario_id TEXT    NOT NULL,
    campaign_id TEXT    NOT NULL,   -- '' for contacts added to the scenario directly
    state       TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,   -- '' until the contact has one
    n           INTEGER NOT NULL,
    PRIMARY KEY (app_id, scenario_id, campaign_id, state, outcome)
) WITHOUT ROWID;
INSERT INTO contact_counts (app_id, scenario_id, campaign_id, state, outcome, n)
    SELECT app_id, scenario_id, coalesce(campaign_id, ''), state, coalesce(outcome, ''), count(*)
    FROM contacts GROUP BY 1, 2, 3, 4, 5;
CREATE TRIGGER contact_counts_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contact_counts (app_id, scenario_id, campaign_id, state, outcome, n)
        VALUES (NEW.app_id, NEW.scenario_id, coalesce(NEW.campaign_id, ''), NEW.state, coalesce(NEW.outcome, ''), 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER contact_counts_update AFTER UPDATE OF state, outcome ON contacts
    WHEN OLD.state IS NOT NEW.state OR OLD.outcome IS NOT NEW.outcome BEGIN
    UPDATE contact_counts SET n = n - 1
        WHERE app_id = OLD.app_id AND scenario_id = OLD.scenario_id AND campaign_id = coalesce(OLD.campaign_id, '')
            AND state = OLD.state AND outcome = coalesce(OLD.outcome, '');
    INSERT INTO contact_counts (app_id, scenario_id, campaign_id, state, outcome, n)
        VALUES (NEW.app_id, NEW.scenario_id, coalesce(NEW.campaign_id, ''), NEW.state, coalesce(NEW.outcome, ''), 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER contact_counts_delete AFTER DELETE ON contacts BEGIN
    UPDATE contact_counts SET n = n - 1
        WHERE app_id = OLD.app_id AND scenario_id = OLD.scenario_id AND campaign_id = coalesce(OLD.campaign_id, '')
            AND state = OLD.state AND outcome = coalesce(OLD.outcome, '');
END;

CREATE TABLE webhook_counts (
    endpoint_id TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (endpoint_id, state)
) WITHOUT ROWID;
INSERT INTO webhook_counts (endpoint_id, state, n)
    SELECT endpoint_id, state, count(*) FROM webhook_messages GROUP BY 1, 2;
CREATE TRIGGER webhook_counts_insert AFTER INSERT ON webhook_messages BEGIN
    INSERT INTO webhook_counts (endpoint_id, state, n) VALUES (NEW.endpoint_id, NEW.state, 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER webhook_counts_update AFTER UPDATE OF state ON webhook_messages
    WHEN OLD.state IS NOT NEW.state BEGIN
    UPDATE webhook_counts SET n = n - 1 WHERE endpoint_id = OLD.endpoint_id AND state = OLD.state;
    INSERT INTO webhook_counts (endpoint_id, state, n) VALUES (NEW.endpoint_id, NEW.state, 1)
        ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER webhook_counts_delete AFTER DELETE ON webhook_messages BEGIN
    UPDATE webhook_counts SET n = n - 1 WHERE endpoint_id = OLD.endpoint_id AND state = OLD.state;
END;

CREATE INDEX contacts_by_phone ON contacts (app_id, phone);

-- migration 9: do-not-call lists, and the audit of attempts kept from dialling
-- A list is the national register (app_id NULL) or one tenant's. Loading a
-- whole list builds a new version ('loading') beside the current one and
-- switches them in one short commit, so no reader sees half a list and no
-- other writer waits on a long load (docs/compliance.md#how-lists-are-stored).
CREATE TABLE dnc_lists (
    id        INTEGER PRIMARY KEY,
    app_id    INTEGER REFERENCES applications(id) ON DELETE CASCADE,  -- NULL: the national register
    state     TEXT    NOT NULL CHECK (state IN ('loading', 'current', 'old')),
    loaded_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX dnc_lists_current ON dnc_lists (coalesce(app_id, 0)) WHERE state = 'current';
CREATE INDEX dnc_lists_by_app ON dnc_lists (app_id);
-- A number is its E.164 digits without the "+" as an INTEGER: 10 million
-- numbers take about 22 bytes each and load at over 300,000 a second.
CREATE TABLE dnc_numbers (
    list_id  INTEGER NOT NULL,
    number   INTEGER NOT NULL,
    added_at INTEGER,            -- NULL: since the list version was loaded
    PRIMARY KEY (list_id, number)
) WITHOUT ROWID;
CREATE TRIGGER dnc_lists_delete AFTER DELETE ON dnc_lists BEGIN
    DELETE FROM dnc_numbers WHERE list_id = OLD.id;
END;
-- One row per attempt the calling rules kept from being dialled, written in
-- the commit that ends or delays the contact. reason: dnc_national,
-- dnc_tenant (and the advertising limits' daily_limit, advertising_hours);
-- until: when a delayed contact is due again, NULL for a block.
CREATE TABLE call_blocks (
    seq         INTEGER PRIMARY KEY,
    app_id      INTEGER NOT NULL REFERENCES applications(id) ON DELETE CASCADE,
    scenario_id TEXT    NOT NULL,
    contact_id  TEXT    NOT NULL,
    phone       TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    until       INTEGER
);
CREATE INDEX call_blocks_by_app ON call_blocks (app_id, at);

-- migration 10: advertising calls (docs/compliance.md#advertising-calls)
-- calls.ad_phone is the number an advertising scenario's call dialled (NULL
-- for care calls), so the per-number daily limit counts a tenant's answered
-- advertising calls to a number with one index range. A tenant's own
-- advertising settings, stricter than the decree's, live in
-- advertising_settings; no row: the decree's.
ALTER TABLE calls ADD COLUMN ad_phone TEXT;
CREATE INDEX calls_ad_answered ON calls (app_id, ad_phone, answered_at)
    WHERE ad_phone IS NOT NULL AND answered_at IS NOT NULL;
CREATE TABLE advertising_settings (
    app_id                       INTEGER PRIMARY KEY REFERENCES applications(id) ON DELETE CASCADE,
    max_calls_per_number_per_day INTEGER NOT NULL,
    hours_start                  TEXT    NOT NULL,   -- HH:MM in Asia/Ho_Chi_Minh
    hours_end                    TEXT    NOT NULL,
    updated_at                   INTEGER NOT NULL
);
-- The admin API's explanation of a contact's wait reads its last delay.
CREATE INDEX call_blocks_by_contact ON call_blocks (contact_id, seq);

-- migration 11: each tenant's destination rules (docs/compliance.md#destinations)
-- JSON arrays of E.164 prefixes ("+8491"), checked before they are stored;
-- '[]': none, the operator's policy alone.
ALTER TABLE applications ADD COLUMN destination_allow TEXT NOT NULL DEFAULT '[]';
ALTER TABLE applications ADD COLUMN destination_deny  TEXT NOT NULL DEFAULT '[]';

-- migration 12: webhook messages due, by endpoint
-- Delivery takes each endpoint's oldest due messages with one range of
-- this index, so an endpoint that has its share under way
-- (webhooks.max_in_flight_per_endpoint) costs the others nothing however
-- many of its messages wait (docs/webhooks.md#fair-delivery).
CREATE INDEX webhook_messages_due_by_endpoint ON webhook_messages (endpoint_id, next_try_at, seq)
    WHERE state = 'pending';

-- migration 13: what was said on a call (docs/voicebot.md#results)
-- The JSON list of turns {"speaker", "text", "at"}; calls ended before this
-- migration read as nothing said.
ALTER TABLE calls ADD COLUMN transcript TEXT NOT NULL DEFAULT '[]';

-- migration 14: new contacts counted once per import
-- SQLite has no statement triggers: migrations 4's and 8's triggers on
-- INSERT updated two counter rows per contact, and cost operation A about
-- a third of its rate (docs/benchmarks.md). An import adds the contacts it
-- stored to queued_contacts and contact_counts with one statement each, in
-- its own transaction (internal/store/import.go, countAdded), as
-- PostgreSQL's statement triggers do; so every INSERT into contacts is
-- counted by its writer. Updates and deletes keep their row triggers (one
-- row each, or a cascade no code path names).
DROP TRIGGER contact_counts_insert;
DROP TRIGGER queued_contacts_insert;

-- migration 15: the audit log of what people did in the console
-- (docs/console.md#audit-log): who (their sign-in), when, what (the form's
-- path and what the console answered), and which tenant's. No reference to
-- the tenant: the log outlives it.
CREATE TABLE audit_log (
    seq     INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    actor   TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    app_key TEXT    NOT NULL DEFAULT '',
    detail  TEXT    NOT NULL DEFAULT ''
);

-- migration 16: calls by minute, for the console's charts
-- Calls started and ended per (scenario, campaign, minute, outcome), kept
-- exact by triggers inside whatever transaction starts or ends a call (as
-- contact_counts is), so a chart of the last hours reads a few hundred
-- rows whatever the number of calls (docs/console.md#charts). minute is
-- the Unix time in minutes; ended 0 counts calls started, 1 calls ended
-- with outcome ('' when none was recorded).
CREATE TABLE call_minutes (
    app_id      INTEGER NOT NULL,
    scenario_id TEXT    NOT NULL,
    minute      INTEGER NOT NULL,
    campaign_id TEXT    NOT NULL,   -- '' for contacts added to the scenario directly
    ended       INTEGER NOT NULL,
    outcome     TEXT    NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (app_id, scenario_id, minute, campaign_id, ended, outcome)
) WITHOUT ROWID;
CREATE INDEX call_minutes_by_app ON call_minutes (app_id, minute);
INSERT INTO call_minutes (app_id, scenario_id, minute, campaign_id, ended, outcome, n)
    SELECT c.app_id, k.scenario_id, c.started_at / 60000, coalesce(k.campaign_id, ''), 0, '', count(*)
    FROM calls c JOIN contacts k ON k.seq = c.contact_seq GROUP BY 1, 2, 3, 4;
INSERT INTO call_minutes (app_id, scenario_id, minute, campaign_id, ended, outcome, n)
    SELECT c.app_id, k.scenario_id, c.ended_at / 60000, coalesce(k.campaign_id, ''), 1, coalesce(c.outcome, ''), count(*)
    FROM calls c JOIN contacts k ON k.seq = c.contact_seq WHERE c.ended_at IS NOT NULL GROUP BY 1, 2, 3, 4, 6;
CREATE TRIGGER call_minutes_start AFTER INSERT ON calls BEGIN
    INSERT INTO call_minutes (app_id, scenario_id, minute, campaign_id, ended, outcome, n)
        SELECT NEW.app_id, scenario_id, NEW.started_at / 60000, coalesce(campaign_id, ''), 0, '', 1
        FROM contacts WHERE seq = NEW.contact_seq
        ON CONFLICT DO UPDATE SET n = n + 1;
    INSERT INTO call_minutes (app_id, scenario_id, minute, campaign_id, ended, outcome, n)
        SELECT NEW.app_id, scenario_id, NEW.ended_at / 60000, coalesce(campaign_id, ''), 1, coalesce(NEW.outcome, ''), 1
        FROM contacts WHERE seq = NEW.contact_seq AND NEW.ended_at IS NOT NULL
        ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER call_minutes_end AFTER UPDATE OF ended_at ON calls
    WHEN OLD.ended_at IS NULL AND NEW.ended_at IS NOT NULL BEGIN
    INSERT INTO call_minutes (app_id, scenario_id, minute, campaign_id, ended, outcome, n)
        SELECT NEW.app_id, scenario_id, NEW.ended_at / 60000, coalesce(campaign_id, ''), 1, coalesce(NEW.outcome, ''), 1
        FROM contacts WHERE seq = NEW.contact_seq
        ON CONFLICT DO UPDATE SET n = n + 1;
END;

-- migration 17: the contacts' reference to their scenario checked at commit
-- A multi-row INSERT that may stop midway (an immediate foreign key or a
-- NOT NULL under ABORT) makes SQLite copy every page it changes into a
-- statement journal first: about one phone-index leaf a contact, a
-- quarter of operation A's writer (docs/benchmarks.md#no-statement-journal-for-contacts).
-- Deferred, the key is checked at COMMIT; an import checks its scenario in
-- its own transaction before it inserts (internal/store/import.go), so
-- none reaches the commit unmet, and ON DELETE CASCADE still acts at once.
-- The key's wording is all that changes, not a byte of the table, so the
-- stored definition is edited in place, as SQLite's ALTER TABLE
-- documentation allows for a constraint, and reloaded.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
    SET sql = replace(sql, 'REFERENCES scenarios(app_id, id) ON DELETE CASCADE',
        'REFERENCES scenarios(app_id, id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED')
    WHERE type = 'table' AND name = 'contacts';
PRAGMA writable_schema = RESET;

-- migration 18: the phone index kept behind the imports, in sorted batches
-- An index on the contacts' phone took one leaf per contact into every
-- import's commit: half of operation A's writer
-- (docs/benchmarks.md#the-phone-index-behind-the-imports). The writer now
-- adds the contacts to contact_phones after their commit, many thousands
-- at a time in key order (internal/store/phone_index.go); a search by
-- phone reads contact_phones and scans the few contacts after
-- contact_phones_indexed.seq, the last contact it holds. A contact deleted
-- leaves it, and a mark above every remaining contact comes down to the
-- last one, because SQLite gives a new contact the seq after the largest.
DROP INDEX contacts_by_phone;
CREATE TABLE contact_phones (
    app_id INTEGER NOT NULL,
    phone  TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    PRIMARY KEY (app_id, phone, seq)
) WITHOUT ROWID;
CREATE TABLE contact_phones_indexed (seq INTEGER NOT NULL);
INSERT INTO contact_phones (app_id, phone, seq) SELECT app_id, phone, seq FROM contacts ORDER BY app_id, phone, seq;
INSERT INTO contact_phones_indexed (seq) SELECT coalesce(max(seq), 0) FROM contacts;
CREATE TRIGGER contact_phones_delete AFTER DELETE ON contacts BEGIN
    DELETE FROM contact_phones WHERE app_id = OLD.app_id AND phone = OLD.phone AND seq = OLD.seq;
    UPDATE contact_phones_indexed SET seq = (SELECT coalesce(max(seq), 0) FROM contacts)
        WHERE seq > (SELECT coalesce(max(seq), 0) FROM contacts);
END;
