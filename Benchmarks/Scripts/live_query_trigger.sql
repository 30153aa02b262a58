-- Live queries, mechanism A: statement-level triggers that tell every listening node which rows of a table
-- a statement changed, by NOTIFY on the channel `livelist_rows`, delivered at commit and in commit order.
--
-- Benchmarks/Scripts/live_query_mechanisms.py runs this file as it is; it is written so that a migration
-- can install it unchanged (every statement can be run again).
--
-- The payload of one statement is compact JSON:
--     {"t":"tickets","k":{"customer":["alice","bob"]}}
-- "t" is the table's name ("s" its schema, present only when that is not `public`), and "k" has, for each
-- routing column named when the table was watched, the distinct values (as text, JSON null for NULL) of
-- that column in the rows the statement changed: their new values and, for UPDATE and DELETE, their old
-- ones too (a row that moves from alice to bob changes both lists). When that text would exceed
-- 7,900 bytes (NOTIFY refuses a payload of 8,000 bytes or more), or after TRUNCATE, or for a table
-- watched without routing columns, the payload is only {"t":"tickets"}: anything in that table may have
-- changed. A statement that changed no row sends nothing. PostgreSQL sends a transaction's identical
-- payloads once, so a transaction of many statements on one customer costs one notification.
--
-- Privileges: the trigger function runs as the role that writes (no SECURITY DEFINER) and needs nothing
-- that such a role lacks: the transition tables need no privilege, pg_notify needs none, and a role with
-- only INSERT, UPDATE and DELETE on a table (TRUNCATE for TRUNCATE) is enough. Installing the triggers
-- (livelist_watch) needs to own the table, as any CREATE TRIGGER does.
--
-- Usage, once per table and again after each change of its routing columns:
--     SELECT livelist_watch('tickets', 'customer');     -- or livelist_watch('app.tickets', 'a', 'b')
--     SELECT livelist_unwatch('tickets');               -- removes the four triggers
-- and on each node: LISTEN livelist_rows;

-- One function for every watched table and every operation. TG_ARGV holds the routing columns' names.
CREATE OR REPLACE FUNCTION livelist_rows_changed() RETURNS trigger
LANGUAGE plpgsql
-- pg_catalog only: a writer's search_path cannot put another to_json or pg_notify in front of these. The
-- transition tables are found whatever the search_path is.
SET search_path = pg_catalog
AS $function$
DECLARE
    head text := '{"t":' || to_json(TG_TABLE_NAME::text)::text
        || CASE WHEN TG_TABLE_SCHEMA = 'public' THEN '' ELSE ',"s":' || to_json(TG_TABLE_SCHEMA::text)::text END;
    selected text := '';  -- the routing columns, as selected from each transition table
    lists text := '''''';  -- the SQL expression of the "k" object's members ('' without routing columns)
    changed text;         -- the query of the rows that the statement changed, over the transition tables
    changed_rows bigint;
    keys text;
    payload text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM pg_notify('livelist_rows', head || '}');
        RETURN NULL;
    END IF;
    FOR i IN 0 .. TG_NARGS - 1 LOOP
        selected := selected || CASE WHEN i > 0 THEN ', ' ELSE '' END || format('%I', TG_ARGV[i]);
        -- "name":["value",...]: to_json quotes and escapes each value, string_agg(DISTINCT ...) keeps one
        -- of each.
        lists := CASE WHEN i > 0 THEN lists || ' || '','' || ' ELSE '' END
            || format('%L || ''['' || coalesce(string_agg(DISTINCT coalesce(to_json(%I::text)::text, ''null''), '',''), '''') || '']''',
                      to_json(TG_ARGV[i])::text || ':', TG_ARGV[i]);
    END LOOP;
    changed := CASE TG_OP
        WHEN 'INSERT' THEN format('SELECT %s FROM livelist_new', selected)
        WHEN 'DELETE' THEN format('SELECT %s FROM livelist_old', selected)
        ELSE format('SELECT %1$s FROM livelist_old UNION ALL SELECT %1$s FROM livelist_new', selected)
    END;
    -- One pass over the changed rows: their count and every routing column's distinct values.
    EXECUTE format('SELECT count(*), %s FROM (%s) AS changed', lists, changed) INTO changed_rows, keys;
    IF changed_rows = 0 THEN
        RETURN NULL;
    END IF;
    payload := head || ',"k":{' || keys || '}}';
    IF TG_NARGS = 0 OR octet_length(payload) > 7900 THEN
        payload := head || '}';
    END IF;
    PERFORM pg_notify('livelist_rows', payload);
    RETURN NULL;
END;
$function$;

-- Removes the four triggers from `watched` (those that are there).
CREATE OR REPLACE FUNCTION livelist_unwatch(watched regclass) RETURNS void
LANGUAGE plpgsql
AS $function$
BEGIN
    EXECUTE format('DROP TRIGGER IF EXISTS livelist_rows_insert ON %s', watched);
    EXECUTE format('DROP TRIGGER IF EXISTS livelist_rows_update ON %s', watched);
    EXECUTE format('DROP TRIGGER IF EXISTS livelist_rows_delete ON %s', watched);
    EXECUTE format('DROP TRIGGER IF EXISTS livelist_rows_truncate ON %s', watched);
END;
$function$;

-- Installs the four triggers on `watched`, with `routing` as its routing columns, in place of any earlier
-- ones. PostgreSQL allows transition tables only on a trigger of one event: hence one trigger per event.
CREATE OR REPLACE FUNCTION livelist_watch(watched regclass, VARIADIC routing text[] DEFAULT '{}') RETURNS void
LANGUAGE plpgsql
AS $function$
DECLARE
    arguments text;
BEGIN
    -- A routing column that does not exist would make every write to the table fail: refuse it now.
    FOR i IN 1 .. coalesce(array_length(routing, 1), 0) LOOP
        IF NOT EXISTS (SELECT FROM pg_attribute
                       WHERE attrelid = watched AND attname = routing[i] AND attnum > 0 AND NOT attisdropped) THEN
            RAISE EXCEPTION 'livelist_watch: % has no column %', watched, routing[i];
        END IF;
    END LOOP;
    SELECT coalesce(string_agg(quote_literal(name), ', '), '') INTO arguments FROM unnest(routing) AS name;
    PERFORM livelist_unwatch(watched);
    EXECUTE format('CREATE TRIGGER livelist_rows_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS livelist_new '
                   'FOR EACH STATEMENT EXECUTE FUNCTION livelist_rows_changed(%s)', watched, arguments);
    EXECUTE format('CREATE TRIGGER livelist_rows_update AFTER UPDATE ON %s '
                   'REFERENCING OLD TABLE AS livelist_old NEW TABLE AS livelist_new '
                   'FOR EACH STATEMENT EXECUTE FUNCTION livelist_rows_changed(%s)', watched, arguments);
    EXECUTE format('CREATE TRIGGER livelist_rows_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS livelist_old '
                   'FOR EACH STATEMENT EXECUTE FUNCTION livelist_rows_changed(%s)', watched, arguments);
    EXECUTE format('CREATE TRIGGER livelist_rows_truncate AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION livelist_rows_changed()', watched);
END;
$function$;
