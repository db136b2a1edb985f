package tfb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Fortunes are the 12 rows of TechEmpower's Fortune table
// (toolset/databases/postgres/create-postgres.sql), ids 1..12: one with
// markup that must come out escaped, one in Japanese, two with an em dash.
var Fortunes = []Fortune{
	{1, "fortune: No such file or directory"},
	{2, "A computer scientist is someone who fixes things that aren't broken."},
	{3, "After enough decimal places, nobody gives a damn."},
	{4, "A bad random number generator: 1, 1, 1, 1, 1, 4.33e+67, 1, 1, 1"},
	{5, "A computer program does what you tell it to do, not what you want it to do."},
	{6, "Emacs is a nice operating system, but I prefer UNIX. — Tom Christaensen"},
	{7, "Any program that runs right is obsolete."},
	{8, "A list is only as strong as its weakest link. — Donald Knuth"},
	{9, "Feature: A bug with seniority."},
	{10, "Computers make very fast, very accurate mistakes."},
	{11, `<script>alert("This should not be displayed in a browser alert box.");</script>`},
	{12, "フレームワークのベンチマーク"},
}

// The schema, TechEmpower's, made only where missing.
const (
	createWorld   = "CREATE TABLE IF NOT EXISTS world (id integer NOT NULL PRIMARY KEY, randomnumber integer NOT NULL DEFAULT 0)"
	createFortune = "CREATE TABLE IF NOT EXISTS fortune (id integer NOT NULL PRIMARY KEY, message varchar(2048) NOT NULL)"
	// fillWorld adds the rows of ids 1..$1 that are missing, each with a
	// random number in 1..$1, as TechEmpower's script draws them.
	fillWorld = `INSERT INTO world (id, randomnumber)
		SELECT x.id, least(floor(random() * $1::integer + 1)::integer, $1::integer) FROM generate_series(1, $1::integer) AS x(id)
		ON CONFLICT (id) DO NOTHING`
	insertFortune = "INSERT INTO fortune (id, message) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING"
)

// Setup makes the tables World (WorldRows rows) and Fortune (Fortunes) in
// pool's database, in one transaction, where they or their rows are
// missing: it is idempotent, and leaves rows that are there as they are
// (World's random numbers, which /updates changes, included). Two Setups
// at once on an empty database may fail: PostgreSQL's CREATE TABLE IF NOT
// EXISTS is not safe against a concurrent one.
func Setup(ctx context.Context, pool *pgxpool.Pool) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, stmt := range []string{createWorld, createFortune} {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, fillWorld, WorldRows); err != nil {
			return err
		}
		var batch pgx.Batch
		for _, f := range Fortunes {
			batch.Queue(insertFortune, f.ID, f.Message)
		}
		return tx.SendBatch(ctx, &batch).Close()
	})
	if err != nil {
		return fmt.Errorf("tfb: setup: %w", err)
	}
	return nil
}
