-- Profiler steps: the host step markers that partition the recovered structure (Kineto's
-- ProfilerStep#N from torch.profiler's schedule and prof.step(), or the record_function /
-- user_annotation ranges named by the analyze option step_markers; docs/KINETO.md).
-- Written by tl_scope_publish (ext/scope/scope.c); empty when the trace has no step marker.

-- @surface traceloom_profiler_step | one profiler step on one device | The step markers that partition the structure, with their host range and the anchors they hold on each device (anchor_n range); repeats never cross a step | SELECT step_n, name, device_id, anchor_count, (host_end_ns - host_start_ns) / 1000.0 AS host_us FROM traceloom_profiler_step ORDER BY step_n
CREATE TABLE traceloom_profiler_step(
  step_n INTEGER NOT NULL,         -- 1-based, steps in (db_idx, host start) order
  db_idx INTEGER NOT NULL,
  device_id INTEGER,               -- the device whose anchors it holds; NULL: it holds none
  name TEXT NOT NULL,              -- the marker: ProfilerStep#7, decode_3, ...
  ordinal INTEGER,                 -- the number its name ends with (7), NULL when none
  process_id INTEGER, thread_id INTEGER, -- the host thread of the marker
  host_start_ns INTEGER NOT NULL, host_end_ns INTEGER NOT NULL,
  first_anchor_n INTEGER,          -- its anchors on that device: the first, and one past the
  end_anchor_n INTEGER,            --   last (anchor_n); they follow each other unless
  anchor_count INTEGER NOT NULL,   --   anchor_count < end_anchor_n - first_anchor_n
  UNIQUE (step_n, device_id)
);
