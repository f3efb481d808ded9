"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29 09:15:05.672208
"""
from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('datasets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('path', sa.String(length=1000), nullable=False),
    sa.Column('task_count', sa.Integer(), nullable=False),
    sa.Column('imported_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('grade_jobs',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('task_id', sa.String(length=300), nullable=False),
    sa.Column('task_hash', sa.String(length=64), nullable=False),
    sa.Column('answer_hash', sa.String(length=64), nullable=False),
    sa.Column('mode', sa.String(length=16), nullable=False),
    sa.Column('grader_version', sa.String(length=32), nullable=False),
    sa.Column('queue', sa.String(length=32), nullable=False),
    sa.Column('task', sa.JSON(), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('worker', sa.String(length=200), nullable=True),
    sa.Column('verdict', sa.JSON(), nullable=True),
    sa.Column('passed', sa.Boolean(), nullable=True),
    sa.Column('reason', sa.String(length=30), nullable=True),
    sa.Column('grade_s', sa.Float(), nullable=True),
    sa.Column('latency_s', sa.Float(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('enqueued_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('task_hash', 'answer_hash', 'mode', 'grader_version', name='uq_grade_jobs_natural')
    )
    op.create_index('ix_grade_jobs_status_queue', 'grade_jobs', ['status', 'queue'], unique=False)
    op.create_index(op.f('ix_grade_jobs_task_id'), 'grade_jobs', ['task_id'], unique=False)
    op.create_table('runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('config', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('phase', sa.String(length=100), nullable=False),
    sa.Column('tags', sa.JSON(), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_index(op.f('ix_runs_updated_at'), 'runs', ['updated_at'], unique=False)
    op.create_table('episodes',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('iteration', sa.Integer(), nullable=False),
    sa.Column('split', sa.String(length=20), nullable=False),
    sa.Column('task_id', sa.String(length=300), nullable=False),
    sa.Column('index', sa.Integer(), nullable=False),
    sa.Column('family', sa.String(length=200), nullable=False),
    sa.Column('prompt', sa.Text(), nullable=True),
    sa.Column('reward', sa.Float(), nullable=False),
    sa.Column('passed', sa.Boolean(), nullable=False),
    sa.Column('n_turns', sa.Integer(), nullable=False),
    sa.Column('policy_version', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('run_id', 'iteration', 'split', 'task_id', 'index', name='uq_episodes_natural')
    )
    op.create_index('ix_episodes_run_family_id', 'episodes', ['run_id', 'family', 'id'], unique=False)
    op.create_index('ix_episodes_run_id_id', 'episodes', ['run_id', 'id'], unique=False)
    op.create_index('ix_episodes_run_iteration_id', 'episodes', ['run_id', 'iteration', 'id'], unique=False)
    op.create_table('heldout_evals',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('iteration', sa.Integer(), nullable=False),
    sa.Column('task_id', sa.String(length=300), nullable=False),
    sa.Column('family', sa.String(length=200), nullable=False),
    sa.Column('n', sa.Integer(), nullable=False),
    sa.Column('passed_by_turn', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'iteration', 'task_id')
    )
    op.create_table('iteration_metrics',
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('iteration', sa.Integer(), nullable=False),
    sa.Column('metrics', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['runs.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('run_id', 'iteration')
    )
    op.create_table('tasks',
    sa.Column('id', sa.String(length=300), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=True),
    sa.Column('rung', sa.String(length=50), nullable=False),
    sa.Column('family', sa.String(length=200), nullable=False),
    sa.Column('split', sa.String(length=20), nullable=False),
    sa.Column('kind', sa.String(length=20), nullable=False),
    sa.Column('lang', sa.String(length=20), nullable=True),
    sa.Column('hash', sa.String(length=64), nullable=False),
    sa.Column('body', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['datasets.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index(op.f('ix_tasks_dataset_id'), 'tasks', ['dataset_id'], unique=False)
    op.create_table('turns',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('episode_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('index', sa.Integer(), nullable=False),
    sa.Column('completion', sa.Text(), nullable=False),
    sa.Column('sampled_tokens', sa.Integer(), nullable=False),
    sa.Column('passed', sa.Boolean(), nullable=False),
    sa.Column('reason', sa.String(length=30), nullable=False),
    sa.Column('feedback', sa.Text(), nullable=False),
    sa.ForeignKeyConstraint(['episode_id'], ['episodes.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('episode_id', 'index', name='uq_turns_natural')
    )


def downgrade() -> None:
    op.drop_table('turns')
    op.drop_index(op.f('ix_tasks_dataset_id'), table_name='tasks')
    op.drop_table('tasks')
    op.drop_table('iteration_metrics')
    op.drop_table('heldout_evals')
    op.drop_index('ix_episodes_run_iteration_id', table_name='episodes')
    op.drop_index('ix_episodes_run_id_id', table_name='episodes')
    op.drop_index('ix_episodes_run_family_id', table_name='episodes')
    op.drop_table('episodes')
    op.drop_index(op.f('ix_runs_updated_at'), table_name='runs')
    op.drop_table('runs')
    op.drop_index(op.f('ix_grade_jobs_task_id'), table_name='grade_jobs')
    op.drop_index('ix_grade_jobs_status_queue', table_name='grade_jobs')
    op.drop_table('grade_jobs')
    op.drop_table('datasets')
