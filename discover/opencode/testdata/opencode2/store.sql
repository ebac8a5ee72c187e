-- An OpenCode 2 opencode.db after migration from 1.x, built by hand: NO OpenCode 2
-- binary could be installed where this was written (package @opencode/cli is not
-- in the registry reachable there), so nothing below was recorded from a real run.
--
-- Schema sources (public OpenCode source, OpenCode 2 line, packages importing
-- @opencode/schema; read 2026-12-02 from the stored index of the public
-- repositories, the exact commit not resolvable there):
--   * 1.x tables (project, session, message, part): copied from sqlite_master of
--     the database OpenCode 1.18.33 wrote in testdata/home (a real run).
--   * session_v2, session_message: packages/core/src/database, the `schema`
--     migration of OpenCode 2's core (CREATE TABLE `session_v2` … with
--     time_idle, time_viewed, idle_outcome, idle_error_type, idle_error_message,
--     time_compacting, time_archived, time_suspended, resume_attempts) and
--     packages/core/src/session/sql.ts (drizzle sqliteTable("session_v2"),
--     sqliteTable("session_message") with its four indexes); time_idle,
--     time_viewed and idle_outcome were added by migration
--     20260819222447_session_viewed_state.
-- Row shapes: packages/schema session-message.ts (Session.Message.Info: a row's
-- `type` is the tag, `data` the rest without type and id): user {time.created,
-- text, files, agents, skills}; assistant {time{created,streamed,completed},
-- agent, model{id,providerID}, content[text|reasoning|tool{id,name,state{status,
-- input,content|error}}], finish, cost, tokens{input,output,reasoning,
-- cache{read,write}}, error{type,message}}; idle {time.created, outcome
-- succeeded|failed|interrupted, error?}. session_v2.cost and tokens_* hold the
-- session totals (the sum of its assistant messages, as 1.x's session row does).
--
-- Sessions (the tests' expectations are written against these numbers):
--   V2Done      2.x only, two replies, idle succeeded
--   V2Migrated  1.x row + 1.x messages (copy left behind) AND a session_v2 row
--               with one more turn: listed once, the session_v2 row winning
--   V2Archived  archived (time_archived), idle succeeded
--   V2Failed    idle failed, a provider auth error
--   V2Open      prompt sent, reply streaming: time_idle NULL
--   V2Interrupt idle interrupted
--   V1Only      a 1.x row only
PRAGMA foreign_keys = OFF;

CREATE TABLE `project` (
          `id` text PRIMARY KEY,
          `worktree` text NOT NULL,
          `vcs` text,
          `name` text,
          `icon_url` text,
          `icon_url_override` text,
          `icon_color` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_initialized` integer,
          `sandboxes` text NOT NULL,
          `commands` text
        );
CREATE TABLE `session` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `workspace_id` text,
          `parent_id` text,
          `slug` text NOT NULL,
          `directory` text NOT NULL,
          `path` text,
          `title` text NOT NULL,
          `version` text NOT NULL,
          `share_url` text,
          `summary_additions` integer,
          `summary_deletions` integer,
          `summary_files` integer,
          `summary_diffs` text,
          `metadata` text,
          `cost` real DEFAULT 0 NOT NULL,
          `tokens_input` integer DEFAULT 0 NOT NULL,
          `tokens_output` integer DEFAULT 0 NOT NULL,
          `tokens_reasoning` integer DEFAULT 0 NOT NULL,
          `tokens_cache_read` integer DEFAULT 0 NOT NULL,
          `tokens_cache_write` integer DEFAULT 0 NOT NULL,
          `revert` text,
          `permission` text,
          `agent` text,
          `model` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_compacting` integer,
          `time_archived` integer,
          CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `part` (
          `id` text PRIMARY KEY,
          `message_id` text NOT NULL,
          `session_id` text NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE
        );
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);

-- OpenCode 2 (the `schema` migration of packages/core/src/database).
CREATE TABLE `session_message` (
          `id` text PRIMARY KEY,
          `session_id` text NOT NULL,
          `type` text NOT NULL,
          `seq` integer NOT NULL,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `data` text NOT NULL,
          CONSTRAINT `fk_session_message_session_id_session_v2_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session_v2`(`id`) ON DELETE CASCADE
        );
CREATE TABLE `session_v2` (
          `id` text PRIMARY KEY,
          `project_id` text NOT NULL,
          `workspace_id` text,
          `parent_id` text,
          `fork_session_id` text,
          `fork_boundary` text,
          `slug` text NOT NULL,
          `directory` text NOT NULL,
          `path` text,
          `title` text,
          `version` text NOT NULL,
          `share_url` text,
          `summary_additions` integer,
          `summary_deletions` integer,
          `summary_files` integer,
          `summary_diffs` text,
          `metadata` text,
          `cost` real DEFAULT 0 NOT NULL,
          `tokens_input` integer DEFAULT 0 NOT NULL,
          `tokens_output` integer DEFAULT 0 NOT NULL,
          `tokens_reasoning` integer DEFAULT 0 NOT NULL,
          `tokens_cache_read` integer DEFAULT 0 NOT NULL,
          `tokens_cache_write` integer DEFAULT 0 NOT NULL,
          `revert` text,
          `permission` text,
          `agent` text,
          `tools` text,
          `model` text,
          `time_created` integer NOT NULL,
          `time_updated` integer NOT NULL,
          `time_idle` integer,
          `time_viewed` integer,
          `idle_outcome` text,
          `idle_error_type` text,
          `idle_error_message` text,
          `time_compacting` integer,
          `time_archived` integer,
          `time_suspended` integer,
          `resume_attempts` integer DEFAULT 0 NOT NULL,
          CONSTRAINT `fk_session_v2_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
        );
CREATE UNIQUE INDEX `session_message_session_seq_idx` ON `session_message` (`session_id`,`seq`);
CREATE INDEX `session_message_session_type_seq_idx` ON `session_message` (`session_id`,`type`,`seq`);
CREATE INDEX `session_message_session_time_created_id_idx` ON `session_message` (`session_id`,`time_created`,`id`);
CREATE INDEX `session_message_time_created_idx` ON `session_message` (`time_created`);
CREATE INDEX `session_v2_project_idx` ON `session_v2` (`project_id`);
CREATE INDEX `session_v2_workspace_idx` ON `session_v2` (`workspace_id`);
CREATE INDEX `session_v2_parent_idx` ON `session_v2` (`parent_id`);

INSERT INTO project VALUES ('7b7b767ad85f27d56540832f03fdc39345ee6737', '/home/dev/frontend', 'git', NULL, NULL, NULL, NULL, 1795100000000, 1795100000000, NULL, '[]', NULL);
INSERT INTO project VALUES ('global', '/', NULL, NULL, NULL, NULL, NULL, 1795100000000, 1795100000000, NULL, '[]', NULL);

-- 1.x rows left behind: the migrated session's copy and a session only 1.x has.
INSERT INTO session (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated)
VALUES ('ses_f1a000002ffeV2Migrated0001', '7b7b767ad85f27d56540832f03fdc39345ee6737', 'calm-river', '/home/dev/frontend', 'Old 1.x title', '1.18.33', 0.0042, 100, 10, 0, 300, 0, 'build', '{"id":"fake-model","providerID":"fake","variant":"default"}', 1795150000000, 1795150005000);
INSERT INTO message VALUES ('msg_f1a0000020001MigUser00001', 'ses_f1a000002ffeV2Migrated0001', 1795150000100, 1795150000100,
 '{"role":"user","time":{"created":1795150000100},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}');
INSERT INTO part VALUES ('prt_f1a0000020001MigUserPart01', 'msg_f1a0000020001MigUser00001', 'ses_f1a000002ffeV2Migrated0001', 1795150000100, 1795150000100,
 '{"type":"text","text":"Migrated prompt: list the components"}');
INSERT INTO message VALUES ('msg_f1a0000020002MigAsst00001', 'ses_f1a000002ffeV2Migrated0001', 1795150000200, 1795150005000,
 '{"role":"assistant","parentID":"msg_f1a0000020001MigUser00001","modelID":"fake-model","providerID":"fake","cost":0.0042,"tokens":{"input":100,"output":10,"reasoning":0,"cache":{"read":300,"write":0}},"time":{"created":1795150000200,"completed":1795150005000},"finish":"stop"}');
INSERT INTO part VALUES ('prt_f1a0000020002MigAsstPart01', 'msg_f1a0000020002MigAsst00001', 'ses_f1a000002ffeV2Migrated0001', 1795150005000, 1795150005000,
 '{"type":"text","text":"Button, Card, Modal."}');

INSERT INTO session (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated)
VALUES ('ses_f1a000007ffeV1OnlySession1', 'global', 'old-oak', '/home/dev', 'Only in 1.x', '1.18.33', 0.001, 20, 5, 0, 0, 0, 'build', '{"id":"fake-model","providerID":"fake","variant":"default"}', 1795140000000, 1795140003000);
INSERT INTO message VALUES ('msg_f1a0000070001V1User000001', 'ses_f1a000007ffeV1OnlySession1', 1795140000100, 1795140000100,
 '{"role":"user","time":{"created":1795140000100},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}');
INSERT INTO part VALUES ('prt_f1a0000070001V1UserPart001', 'msg_f1a0000070001V1User000001', 'ses_f1a000007ffeV1OnlySession1', 1795140000100, 1795140000100,
 '{"type":"text","text":"A 1.x prompt"}');
INSERT INTO message VALUES ('msg_f1a0000070002V1Asst000001', 'ses_f1a000007ffeV1OnlySession1', 1795140000200, 1795140003000,
 '{"role":"assistant","parentID":"msg_f1a0000070001V1User000001","modelID":"fake-model","providerID":"fake","cost":0.001,"tokens":{"input":20,"output":5,"reasoning":0,"cache":{"read":0,"write":0}},"time":{"created":1795140000200,"completed":1795140003000},"finish":"stop"}');

-- V2Done: two replies (600+600 input, 170+170 output, 30+30 reasoning,
-- 2500+2500 cache read, 100+100 cache write; 0.0061+0.0062 USD).
INSERT INTO session_v2 (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated, time_idle, idle_outcome)
VALUES ('ses_f1a000001ffeV2DoneSessio01', '7b7b767ad85f27d56540832f03fdc39345ee6737', 'brave-comet', '/home/dev/frontend', 'Add a README', '2.0.25', 0.0123, 1200, 340, 60, 5000, 200, 'build', '{"id":"m1","providerID":"fake"}', 1795200000000, 1795200009000, 1795200009000, 'succeeded');
INSERT INTO session_message VALUES ('msg_f1a0000010001DoneUser0001', 'ses_f1a000001ffeV2DoneSessio01', 'user', 1, 1795200000100, 1795200000100,
 '{"time":{"created":1795200000100},"text":"Add a README to this repo","files":[],"agents":[],"skills":[]}');
INSERT INTO session_message VALUES ('msg_f1a0000010002DoneModel001', 'ses_f1a000001ffeV2DoneSessio01', 'model-switched', 2, 1795200000150, 1795200000150,
 '{"time":{"created":1795200000150},"model":{"id":"m1","providerID":"fake"}}');
INSERT INTO session_message VALUES ('msg_f1a0000010003DoneAsst0001', 'ses_f1a000001ffeV2DoneSessio01', 'assistant', 3, 1795200000200, 1795200004000,
 '{"time":{"created":1795200000200,"streamed":1795200003000,"completed":1795200004000},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[{"type":"reasoning","text":"Look first."},{"type":"tool","id":"call_1","name":"shell","state":{"status":"completed","input":{"command":"ls"},"content":[{"type":"text","text":"src\npackage.json"}]},"time":{"created":1795200003000,"ran":1795200003100,"completed":1795200003500}}],"finish":"tool-calls","cost":0.0061,"tokens":{"input":600,"output":170,"reasoning":30,"cache":{"read":2500,"write":100}}}');
INSERT INTO session_message VALUES ('msg_f1a0000010004DoneAsst0002', 'ses_f1a000001ffeV2DoneSessio01', 'assistant', 4, 1795200004100, 1795200008900,
 '{"time":{"created":1795200004100,"streamed":1795200008800,"completed":1795200008900},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[{"type":"text","text":"README.md added."}],"finish":"stop","cost":0.0062,"tokens":{"input":600,"output":170,"reasoning":30,"cache":{"read":2500,"write":100}}}');
INSERT INTO session_message VALUES ('msg_f1a0000010005DoneIdle0001', 'ses_f1a000001ffeV2DoneSessio01', 'idle', 5, 1795200009000, 1795200009000,
 '{"time":{"created":1795200009000},"outcome":"succeeded"}');

-- V2Migrated: the 1.x turn copied over (seq 1-2) and one more in 2.x (seq 3-5).
INSERT INTO session_v2 (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated, time_idle, idle_outcome)
VALUES ('ses_f1a000002ffeV2Migrated0001', '7b7b767ad85f27d56540832f03fdc39345ee6737', 'calm-river', '/home/dev/frontend', 'Components overview', '2.0.25', 0.0092, 250, 35, 0, 900, 0, 'build', '{"id":"m1","providerID":"fake"}', 1795150000000, 1795201005000, 1795201005000, 'succeeded');
INSERT INTO session_message VALUES ('msg_f1a0000020001MigUser00001', 'ses_f1a000002ffeV2Migrated0001', 'user', 1, 1795150000100, 1795150000100,
 '{"time":{"created":1795150000100},"text":"Migrated prompt: list the components","files":[],"agents":[],"skills":[]}');
INSERT INTO session_message VALUES ('msg_f1a0000020002MigAsst00001', 'ses_f1a000002ffeV2Migrated0001', 'assistant', 2, 1795150000200, 1795150005000,
 '{"time":{"created":1795150000200,"completed":1795150005000},"agent":"build","model":{"id":"fake-model","providerID":"fake"},"content":[{"type":"text","text":"Button, Card, Modal."}],"finish":"stop","cost":0.0042,"tokens":{"input":100,"output":10,"reasoning":0,"cache":{"read":300,"write":0}}}');
INSERT INTO session_message VALUES ('msg_f1a0000020003MigUser00002', 'ses_f1a000002ffeV2Migrated0001', 'user', 3, 1795201000000, 1795201000000,
 '{"time":{"created":1795201000000},"text":"Now in 2.x: describe Modal","files":[],"agents":[],"skills":[]}');
INSERT INTO session_message VALUES ('msg_f1a0000020004MigAsst00002', 'ses_f1a000002ffeV2Migrated0001', 'assistant', 4, 1795201000100, 1795201004900,
 '{"time":{"created":1795201000100,"completed":1795201004900},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[{"type":"text","text":"Modal is a dialog."}],"finish":"stop","cost":0.005,"tokens":{"input":150,"output":25,"reasoning":0,"cache":{"read":600,"write":0}}}');
INSERT INTO session_message VALUES ('msg_f1a0000020005MigIdle00001', 'ses_f1a000002ffeV2Migrated0001', 'idle', 5, 1795201005000, 1795201005000,
 '{"time":{"created":1795201005000},"outcome":"succeeded"}');

-- V2Archived
INSERT INTO session_v2 (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated, time_idle, idle_outcome, time_archived)
VALUES ('ses_f1a000003ffeV2Archived0001', 'global', 'quiet-lake', '/home/dev', 'Archived work', '2.0.25', 0.002, 40, 8, 0, 0, 0, 'build', '{"id":"m1","providerID":"fake"}', 1795160000000, 1795160002000, 1795160002000, 'succeeded', 1795170000000);
INSERT INTO session_message VALUES ('msg_f1a0000030001ArchUser0001', 'ses_f1a000003ffeV2Archived0001', 'user', 1, 1795160000100, 1795160000100,
 '{"time":{"created":1795160000100},"text":"Archived prompt","files":[],"agents":[],"skills":[]}');
INSERT INTO session_message VALUES ('msg_f1a0000030002ArchAsst0001', 'ses_f1a000003ffeV2Archived0001', 'assistant', 2, 1795160000200, 1795160001900,
 '{"time":{"created":1795160000200,"completed":1795160001900},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[{"type":"text","text":"ok"}],"finish":"stop","cost":0.002,"tokens":{"input":40,"output":8,"reasoning":0,"cache":{"read":0,"write":0}}}');
INSERT INTO session_message VALUES ('msg_f1a0000030003ArchIdle0001', 'ses_f1a000003ffeV2Archived0001', 'idle', 3, 1795160002000, 1795160002000,
 '{"time":{"created":1795160002000},"outcome":"succeeded"}');

-- V2Failed: the provider refused the key.
INSERT INTO session_v2 (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated, time_idle, idle_outcome, idle_error_type, idle_error_message)
VALUES ('ses_f1a000004ffeV2FailedSess01', '7b7b767ad85f27d56540832f03fdc39345ee6737', 'red-fox', '/home/dev/frontend', NULL, '2.0.25', 0, 0, 0, 0, 0, 0, 'build', '{"id":"m1","providerID":"fake"}', 1795180000000, 1795180001000, 1795180001000, 'failed', 'provider.auth', 'stub error 401 (scripted)');
INSERT INTO session_message VALUES ('msg_f1a0000040001FailUser0001', 'ses_f1a000004ffeV2FailedSess01', 'user', 1, 1795180000100, 1795180000100,
 '{"time":{"created":1795180000100},"text":"This will fail","files":[],"agents":[],"skills":[]}');
INSERT INTO session_message VALUES ('msg_f1a0000040002FailAsst0001', 'ses_f1a000004ffeV2FailedSess01', 'assistant', 2, 1795180000200, 1795180000900,
 '{"time":{"created":1795180000200,"completed":1795180000900},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[],"error":{"type":"provider.auth","message":"stub error 401 (scripted)"}}');
INSERT INTO session_message VALUES ('msg_f1a0000040003FailIdle0001', 'ses_f1a000004ffeV2FailedSess01', 'idle', 3, 1795180001000, 1795180001000,
 '{"time":{"created":1795180001000},"outcome":"failed","error":{"type":"provider.auth","message":"stub error 401 (scripted)"}}');

-- V2Open: the reply is streaming (no completed, session not idle).
INSERT INTO session_v2 (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated)
VALUES ('ses_f1a000005ffeV2OpenSession1', '7b7b767ad85f27d56540832f03fdc39345ee6737', 'swift-hawk', '/home/dev/frontend', NULL, '2.0.25', 0, 0, 0, 0, 0, 0, 'build', '{"id":"m1","providerID":"fake"}', 1795211900000, 1795211900300);
INSERT INTO session_message VALUES ('msg_f1a0000050001OpenUser0001', 'ses_f1a000005ffeV2OpenSession1', 'user', 1, 1795211900100, 1795211900100,
 '{"time":{"created":1795211900100},"text":"Refactor the router","files":[],"agents":[],"skills":[]}');
INSERT INTO session_message VALUES ('msg_f1a0000050002OpenAsst0001', 'ses_f1a000005ffeV2OpenSession1', 'assistant', 2, 1795211900300, 1795211900300,
 '{"time":{"created":1795211900300},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[{"type":"text","text":"Working on"}]}');

-- V2Interrupt: the user interrupted the reply.
INSERT INTO session_v2 (id, project_id, slug, directory, title, version, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, tokens_cache_write, agent, model, time_created, time_updated, time_idle, idle_outcome)
VALUES ('ses_f1a000006ffeV2Interrupt001', '7b7b767ad85f27d56540832f03fdc39345ee6737', 'lone-wolf', '/home/dev/frontend', 'Stopped early', '2.0.25', 0.0005, 10, 2, 0, 0, 0, 'build', '{"id":"m1","providerID":"fake"}', 1795190000000, 1795190002000, 1795190002000, 'interrupted');
INSERT INTO session_message VALUES ('msg_f1a0000060001IntrUser0001', 'ses_f1a000006ffeV2Interrupt001', 'user', 1, 1795190000100, 1795190000100,
 '{"time":{"created":1795190000100},"text":"Long task","files":[],"agents":[],"skills":[]}');
INSERT INTO session_message VALUES ('msg_f1a0000060002IntrAsst0001', 'ses_f1a000006ffeV2Interrupt001', 'assistant', 2, 1795190000200, 1795190001900,
 '{"time":{"created":1795190000200,"completed":1795190001900},"agent":"build","model":{"id":"m1","providerID":"fake"},"content":[{"type":"text","text":"Start"}],"cost":0.0005,"tokens":{"input":10,"output":2,"reasoning":0,"cache":{"read":0,"write":0}},"error":{"type":"aborted","message":"Session execution interrupted"}}');
INSERT INTO session_message VALUES ('msg_f1a0000060003IntrIdle0001', 'ses_f1a000006ffeV2Interrupt001', 'idle', 3, 1795190002000, 1795190002000,
 '{"time":{"created":1795190002000},"outcome":"interrupted"}');
