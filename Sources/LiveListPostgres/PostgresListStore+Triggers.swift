import LiveListEngine
import Logging
import PostgresNIO

// What announces the changes to a watched table: statement-level triggers that call
// `livelist_rows_changed()` with the table's name and its watched columns, which sends one
// notification on `livelist_rows` per statement (docs/LIVE-QUERIES.md).

extension PostgresListStore {
    /// The channel of the app's tables' changes.
    static let rowsChannel = "livelist_rows"
    /// The largest payload the function sends with values; larger, it sends the table alone (PostgreSQL
    /// refuses payloads of 8,000 bytes or more).
    static let largestRowsPayload = 7_900

    /// The function the triggers call (schema version 5), generic over the table: TG_ARGV[0] is the
    /// table's name as the app gave it, the others its watched columns. One notification a statement:
    /// `{"t": TABLE, "k": {COLUMN: [VALUE, ...]}}` with the distinct non-null values, as text, of each
    /// column in the rows the statement changed, before and after (the transition tables), or
    /// `{"t": TABLE}` alone (any row may have changed) for a `TRUNCATE`, a payload past
    /// ``largestRowsPayload`` bytes, or a watched column that the table no longer has (rather than
    /// failing the app's write). A statement that changed no row sends nothing. It reads nothing but
    /// the transition tables and the catalog, and `pg_notify` needs no right: a role with only
    /// INSERT, UPDATE or DELETE on the table writes through it. At most 2,000 values a column are
    /// read: that many never fit. Its search path is `pg_catalog` alone, so that a writer's own
    /// search path cannot put another `pg_notify` (one that tells no node) in front of it.
    static let rowsChangedFunction = """
        CREATE OR REPLACE FUNCTION livelist_rows_changed() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $function$
        DECLARE
            whole text := jsonb_build_object('t', TG_ARGV[0])::text;
            changed_rows text;
            changed boolean;
            found text[];
            keys jsonb := '{}';
            payload text;
        BEGIN
            IF TG_OP = 'TRUNCATE' THEN
                PERFORM pg_notify('livelist_rows', whole);
                RETURN NULL;
            END IF;
            EXECUTE 'SELECT EXISTS (SELECT FROM ' || CASE TG_OP WHEN 'INSERT' THEN 'livelist_new' ELSE 'livelist_old' END || ')' INTO changed;
            IF NOT changed THEN
                RETURN NULL;
            END IF;
            changed_rows := CASE TG_OP
                WHEN 'INSERT' THEN 'SELECT %1$I::text AS v FROM livelist_new'
                WHEN 'DELETE' THEN 'SELECT %1$I::text AS v FROM livelist_old'
                ELSE 'SELECT %1$I::text AS v FROM livelist_old UNION ALL SELECT %1$I::text FROM livelist_new' END;
            FOR i IN 1 .. TG_NARGS - 1 LOOP
                IF NOT EXISTS (SELECT FROM pg_catalog.pg_attribute WHERE attrelid = TG_RELID AND attname = TG_ARGV[i] AND attnum > 0 AND NOT attisdropped) THEN
                    PERFORM pg_notify('livelist_rows', whole);
                    RETURN NULL;
                END IF;
                EXECUTE format('SELECT array_agg(v ORDER BY v) FROM (SELECT DISTINCT v FROM (' || changed_rows || ') AS r WHERE v IS NOT NULL LIMIT 2000) AS d', TG_ARGV[i])
                    INTO found;
                keys := keys || jsonb_build_object(TG_ARGV[i], coalesce(found, '{}'));
                IF octet_length(keys::text) > 7900 THEN
                    PERFORM pg_notify('livelist_rows', whole);
                    RETURN NULL;
                END IF;
            END LOOP;
            payload := jsonb_build_object('t', TG_ARGV[0], 'k', keys)::text;
            PERFORM pg_notify('livelist_rows', CASE WHEN octet_length(payload) > 7900 THEN whole ELSE payload END);
            RETURN NULL;
        END
        $function$
        """

    /// The triggers of a watched table, by name: when each fires (`pg_trigger.tgtype`: AFTER, FOR EACH
    /// STATEMENT, and its event) and the transition tables it passes. PostgreSQL allows transition
    /// tables only on a trigger of one event, hence four.
    static let rowTriggers: [RowTrigger] = [
        RowTrigger(name: "livelist_rows_ins", event: "INSERT", type: 4, oldTable: nil, newTable: "livelist_new"),
        RowTrigger(name: "livelist_rows_upd", event: "UPDATE", type: 16, oldTable: "livelist_old", newTable: "livelist_new"),
        RowTrigger(name: "livelist_rows_del", event: "DELETE", type: 8, oldTable: "livelist_old", newTable: nil),
        RowTrigger(name: "livelist_rows_trunc", event: "TRUNCATE", type: 32, oldTable: nil, newTable: nil),
    ]

    /// The statements that (re)make the triggers of `table` (quoted) calling `function` (quoted) with
    /// `arguments` (checked identifiers, so plain string literals): run in one transaction.
    static func triggerStatements(table: String, function: String, arguments: [String]) -> [String] {
        let call = "\(function)(\(arguments.map { "'\($0)'" }.joined(separator: ", ")))"
        let drops = rowTriggers.map { "DROP TRIGGER IF EXISTS \($0.name) ON \(table)" }
        let creations = rowTriggers.map { trigger in
            let old = trigger.oldTable.map { " OLD TABLE AS \($0)" } ?? ""
            let new = trigger.newTable.map { " NEW TABLE AS \($0)" } ?? ""
            let referencing = old.isEmpty && new.isEmpty ? "" : " REFERENCING\(old)\(new)"
            return "CREATE TRIGGER \(trigger.name) AFTER \(trigger.event) ON \(table)\(referencing) FOR EACH STATEMENT EXECUTE FUNCTION \(call)"
        }
        return drops + creations
    }

    /// Reads what `table` is and what announces its changes now; nil when there is no such table.
    static func inspect(_ table: TableName, _ connection: PostgresConnection, logger: Logger) async throws -> WatchedTableState? {
        let schema = table.schema ?? ""
        let rows = try await connection.query("""
            SELECT c.oid::int8, c.relkind::text, pg_get_userbyid(c.relowner)::text, format('%I.%I', n.nspname, c.relname),
                coalesce((SELECT array_agg(a.attname::text) FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '{}'),
                coalesce((SELECT format('%I.%I', fn.nspname, f.proname) FROM pg_proc f JOIN pg_namespace fn ON fn.oid = f.pronamespace
                    WHERE f.oid = to_regprocedure('livelist_rows_changed()')), ''),
                coalesce(to_regprocedure('livelist_rows_changed()')::oid::int8, 0)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE c.relname = \(table.table) AND (CASE WHEN \(schema) = '' THEN pg_table_is_visible(c.oid) ELSE n.nspname = \(schema) END)
            """, logger: logger)
        var found: WatchedTableState?
        for try await (oid, kind, owner, qualified, columns, function, functionID) in rows.decode((Int, String, String, String, [String], String, Int).self) {
            found = WatchedTableState(
                oid: oid, kind: kind, owner: owner, qualified: qualified, columns: Set(columns), function: function, functionID: functionID)
        }
        guard var state = found else { return nil }
        let triggers = try await connection.query("""
            SELECT tgname::text, tgfoid::int8, tgtype::int8, tgenabled::text, coalesce(tgoldtable::text, ''), coalesce(tgnewtable::text, ''),
                tgqual IS NULL AND cardinality(tgattr::int2[]) = 0, tgargs
            FROM pg_trigger WHERE tgrelid = \(state.oid)::oid AND tgname LIKE 'livelist_rows_%'
            """, logger: logger)
        for try await (name, function, type, enabled, old, new, plain, arguments) in triggers.decode(
            (String, Int, Int, String, String, String, Bool, ByteBuffer).self)
        {
            guard let expected = rowTriggers.first(where: { $0.name == name }) else { continue }
            let fits = function == state.functionID && type == expected.type && ["O", "A"].contains(enabled) && old == (expected.oldTable ?? "")
                && new == (expected.newTable ?? "") && plain
            // tgargs: each argument ends with a zero byte.
            let split = Array(arguments.readableBytesView).split(separator: 0, omittingEmptySubsequences: false).dropLast()
            state.triggers[name] = InstalledTrigger(fits: fits, arguments: split.map { String(decoding: $0, as: UTF8.self) })
        }
        return state
    }
}

/// One of a watched table's triggers.
struct RowTrigger: Sendable {
    var name: String
    var event: String
    /// `pg_trigger.tgtype` of an AFTER ... FOR EACH STATEMENT trigger of `event`.
    var type: Int
    var oldTable: String?
    var newTable: String?
}

/// A trigger of the table as it is: whether it is one of ours, as made, and its arguments.
struct InstalledTrigger: Sendable {
    var fits: Bool
    var arguments: [String]
}

/// A table to watch, as found in the catalog.
struct WatchedTableState: Sendable {
    var oid: Int
    /// `pg_class.relkind`: `r` a table, `p` a partitioned table.
    var kind: String
    var owner: String
    /// `schema.table`, quoted where needed.
    var qualified: String
    var columns: Set<String>
    /// `livelist_rows_changed`, quoted and qualified; empty when the schema lacks it.
    var function: String
    var functionID: Int
    var triggers: [String: InstalledTrigger] = [:]

    /// Whether every trigger is there as made, calling the function with `name` and at least `columns`.
    func announces(_ name: String, _ columns: Set<String>) -> Bool {
        PostgresListStore.rowTriggers.allSatisfy { expected in
            guard let trigger = triggers[expected.name], trigger.fits, trigger.arguments.first == name else { return false }
            return columns.isSubset(of: trigger.arguments.dropFirst())
        }
    }

    /// The columns the triggers announce now, of those the table still has.
    var announcedColumns: Set<String> {
        Set(triggers.values.flatMap { $0.arguments.dropFirst() }).intersection(columns)
    }
}

/// A name of the app's (a table, a column, a parameter), as PostgreSQL stores it: a letter or `_`, then
/// letters, digits and `_`, at most 63 bytes. Always quoted in the statements made with it, so matched
/// exactly: a table or column created without quotes has a lowercase name.
enum Identifier {
    static func checked(_ text: String, _ what: String) throws(StoreError) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.first, first == "_" || ("a" ... "z").contains(first) || ("A" ... "Z").contains(first), scalars.count <= 63,
            scalars.allSatisfy({ $0 == "_" || ("a" ... "z").contains($0) || ("A" ... "Z").contains($0) || ("0" ... "9").contains($0) })
        else {
            throw StoreError("\(what) \(quotedForMessage(text)) is not a plain name (a letter or _, then letters, digits and _, up to 63)")
        }
        return text
    }

    /// `text` quoted as an SQL identifier (it was checked: no quote inside).
    static func quoted(_ text: String) -> String {
        "\"\(text)\""
    }

    /// `text` for a message: quoted, at most 80 characters, control characters escaped.
    static func quotedForMessage(_ text: String) -> String {
        let shown = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return "\"" + shown.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined() + "\""
    }
}

/// A table named by the app: `table` (found through the search path) or `schema.table`.
struct TableName: Sendable {
    var name: String
    var schema: String?
    var table: String

    init(_ name: String) throws(StoreError) {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count <= 2 else {
            throw StoreError("the table \(Identifier.quotedForMessage(name)) is not TABLE or SCHEMA.TABLE")
        }
        self.name = name
        schema = parts.count == 2 ? try Identifier.checked(parts[0], "the schema of the table") : nil
        table = try Identifier.checked(parts[parts.count - 1], "the table")
    }

    /// The name quoted for a statement.
    var quoted: String {
        (schema.map { Identifier.quoted($0) + "." } ?? "") + Identifier.quoted(table)
    }
}
