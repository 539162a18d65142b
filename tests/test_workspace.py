

def test_the_tutors_own_scratch_workspaces_leave_the_learners_remembered_one_alone(tmp_path, monkeypatch):
    """dev check and the benchmarks grade in temporary workspaces: the one `find_workspace` returns stays
    the learner's."""
    from tutor import workspace as ws_module

    monkeypatch.setattr(ws_module, "_REMEMBERED", tmp_path / "config" / "workspace")
    monkeypatch.delenv("INFPROF_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    mine = ws_module.init_workspace(tmp_path / "mine")
    scratch = ws_module.scratch_workspace("infprof-test-")
    assert scratch.root != mine.root and scratch.runs_dir.exists()
    assert ws_module.find_workspace().root == mine.root
