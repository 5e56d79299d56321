-- Core provenance relations (outputs.md section 1). Published by every traceloom_analyze().
--
-- Lines `-- @surface name | row grain | purpose | example SQL` document each relation; the
-- publisher turns them into rows of traceloom_analysis_surface (outputs.md section 6).

-- @surface traceloom_metadata | one row per key | Provenance of the analysis: tool and schema versions, source kind, paths, sizes and SHA-256 of the inputs, options, status | SELECT key, value FROM traceloom_metadata ORDER BY key
CREATE TABLE traceloom_metadata(
  key TEXT PRIMARY KEY,
  value TEXT
);

-- @surface traceloom_input | one row per analysed input (db_idx) | The inputs of the analysis: family, path, provider and the capture-stream companion status | SELECT db_idx, source_kind, path, stream_info_status FROM traceloom_input
CREATE TABLE traceloom_input(
  db_idx INTEGER PRIMARY KEY,
  source_kind TEXT NOT NULL,
  provider TEXT NOT NULL,
  path TEXT NOT NULL,
  stream_info_path TEXT,
  stream_info_status TEXT,
  stream_info_detail TEXT,
  event_count INTEGER,
  runtime_call_count INTEGER
);

-- @surface traceloom_raw_source_database | one row per source SQLite file | Every file the analysis read (monolithic DBs, split parts, companions), with size and SHA-256 | SELECT source_id, source_path, embedded_mode, size_bytes FROM traceloom_raw_source_database ORDER BY source_id
CREATE TABLE traceloom_raw_source_database(
  source_id INTEGER PRIMARY KEY,
  source_ordinal INTEGER,
  source_path TEXT,
  embedded_mode TEXT,
  size_bytes INTEGER,
  sha256 TEXT,
  db_idx INTEGER,
  source_role TEXT
);

-- @surface traceloom_raw_table | one row per table of a source file | The tables of every source file with their row counts | SELECT source_path, source_table, row_count FROM traceloom_raw_table ORDER BY source_id, source_table
CREATE TABLE traceloom_raw_table(
  source_id INTEGER,
  source_path TEXT,
  source_table TEXT,
  embedded_table_name TEXT,
  source_rowid_column TEXT,
  row_count INTEGER,
  PRIMARY KEY(source_id, source_table)
);
CREATE INDEX traceloom_raw_table_path ON traceloom_raw_table(source_path, source_table);

-- @surface traceloom_source_ref | one row per registered source table of an input | The source tables each input's reader registered, numbered per input in registration order (the events' and decisions' source_ref_id): every table of the input's files in (file, table) order, on an Nsight export only the event tables it reads in its fixed order, then the replay units of the analysis | SELECT db_idx, source_ref_id, source_table FROM traceloom_source_ref ORDER BY db_idx, source_ref_id
CREATE TABLE traceloom_source_ref(
  db_idx INTEGER NOT NULL,
  source_ref_id INTEGER NOT NULL,
  source_id INTEGER,               -- traceloom_raw_source_database.source_id; NULL: the analysis's
  source_table TEXT NOT NULL,
  PRIMARY KEY(db_idx, source_ref_id)
);

-- @surface traceloom_profile_inventory | one row per input, file, table, capability or warning | The capability inventory of the profile (what traceloom_profile() reports), kept with the analysis | SELECT db_idx, capability, usable, detail FROM traceloom_profile_inventory WHERE item = 'capability'
CREATE TABLE traceloom_profile_inventory(
  db_idx INTEGER,
  item TEXT,
  source_kind TEXT,
  path TEXT,
  table_name TEXT,
  row_count INTEGER,
  capability TEXT,
  usable INTEGER,
  detail TEXT
);

-- @surface traceloom_analysis_surface | one row per published relation | The catalog of this analysis database: every table and view with its grain, purpose and a runnable example | SELECT surface_name, purpose FROM traceloom_analysis_surface ORDER BY surface_name
CREATE TABLE traceloom_analysis_surface(
  surface_name TEXT PRIMARY KEY,
  relation_name TEXT,
  row_grain TEXT,
  purpose TEXT,
  example_sql TEXT
);
