-- Fair scheduling of background jobs (docs/JOBS.md, "Scheduling"). Before this, jobs ran
-- oldest first: one company queuing thousands of report renders delayed every other
-- company's mail until its backlog was done.
--
-- `priority`: the job's class, from its kind; a lower class always runs first
-- (0: mail and tax submissions, 1: maintenance, 2: report renders).
-- `turn`: the job's place in line within its class, given at enqueue so that each
-- company's waiting jobs are spaced one turn apart from the turn being served: companies
-- take turns instead of waiting behind another company's whole backlog.
ALTER TABLE jobs ADD COLUMN priority BIGINT NOT NULL DEFAULT 1;
ALTER TABLE jobs ADD COLUMN turn BIGINT NOT NULL DEFAULT 0;
UPDATE jobs SET priority = 0
    WHERE kind IN ('email.send', 'member.password', 'report.mail', 'verifactu.submit');
UPDATE jobs SET priority = 2 WHERE kind = 'report.render';
-- The claim: the next due job in class and turn order.
CREATE INDEX jobs_turns ON jobs (status, priority, turn, id);
-- A company's last turn in a class (enqueue), and its queued reports (the cap).
CREATE INDEX jobs_company_turns ON jobs (status, priority, company_id, turn);
