"""Gomoku against the rule-based bot (paper C.4): the policy plays white, the bot plays black.

Rule: freestyle Gomoku on an N x N board; five *or more* stones in a row (horizontally,
vertically or diagonally) win, so overlines count. Black's first stone is the instance (the
opening); then white moves and, inside `step`, black answers with `bot.expert_move`. The game
ends at once on a win, or as a draw when the board is full.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import torch

from nco.env import Env
from nco.problems.gomoku import bot_v1
from nco.problems.gomoku.bot import expert_move, has_five
from nco.problems.gomoku.generator import all_openings, generate
from nco.problems.gomoku.types import GomokuInstances, GomokuState

LEARN_FROM = ("winner", "white")
BOTS = {"v1": bot_v1.expert_move, "rules": expert_move}  # black's move rules, see GomokuEnv
REPLAY_CACHE = 4096  # games kept by `training_batch` (an epoch's pseudo-experts, one per opening)


class GomokuEnv(Env[GomokuInstances, GomokuState]):
    """White's moves against the deterministic black bot on an N x N board (N >= 5).

    Actions are cells row * N + col (A = N * N); occupied cells are masked. Each `step` places
    white's stone and, unless that ended the game, black's reply. Objective: +1 white win,
    0 draw (full board), -1 black win. Rows of one batch end at different depths.

    Parameters
    ----------
    board_size
        N, the board side.
    learn_from
        Whose moves `training_batch` targets: "winner" (paper C.4: in games black won, black's
        replies, seen from black's side; otherwise white's moves) or "white" (always white's).
    bot
        Black's rules: "v1" (LightZero's scoring rule bot, the paper's opponent,
        `nco.problems.gomoku.bot_v1`) or "rules" (nco's earlier window-pattern bot,
        `nco.problems.gomoku.bot`, which completes its fives and blocks fours first).
    """

    name = "gomoku"

    def __init__(self, board_size: int = 9, learn_from: str = "winner", bot: str = "v1") -> None:
        if board_size < 5:
            raise ValueError(f"GomokuEnv: expected board_size >= 5, got {board_size}.")
        if learn_from not in LEARN_FROM:
            raise ValueError(f"GomokuEnv: expected learn_from in {LEARN_FROM}, got {learn_from!r}.")
        if bot not in BOTS:
            raise ValueError(f"GomokuEnv: expected bot in {sorted(BOTS)}, got {bot!r}.")
        self.board_size = board_size
        self.learn_from = learn_from
        self.bot = bot
        # (opening, white's moves) -> (plies, winner) of recently replayed games: training
        # batches draw the same few games (one per opening) many times per epoch
        self._replays: OrderedDict[tuple[int, bytes], tuple[torch.Tensor, int]] = OrderedDict()

    @property
    def num_cells(self) -> int:
        """N * N, the number of actions."""
        return self.board_size * self.board_size

    def num_actions(self, instances: GomokuInstances) -> int:
        """Width of masks and logits: one action per cell."""
        return self.num_cells

    def generate(self, num: int, generator: torch.Generator | None = None) -> GomokuInstances:
        """Uniformly random opening cells for black."""
        return generate(num, self.num_cells, generator)

    def all_instances(self, device: torch.device | str = "cpu") -> GomokuInstances:
        """All N * N openings, in cell order (the paper's training and evaluation set)."""
        return all_openings(self.num_cells, device)

    def reset(self, instances: GomokuInstances) -> GomokuState:
        """Boards with black's opening stone, white to move."""
        opening = instances.opening
        if opening.dim() != 1 or bool(((opening < 0) | (opening >= self.num_cells)).any()):
            raise ValueError(
                "GomokuInstances.opening: expected a 1-d tensor of cells in "
                f"0..{self.num_cells - 1}."
            )
        b, n = opening.shape[0], self.board_size
        board = torch.zeros(b, self.num_cells, dtype=torch.int8, device=opening.device)
        board[torch.arange(b, device=opening.device), opening] = -1
        return GomokuState(
            board=board.view(b, n, n),
            done=torch.zeros(b, dtype=torch.bool, device=opening.device),
            winner=torch.zeros(b, dtype=torch.int8, device=opening.device),
        )

    def step(self, state: GomokuState, actions: torch.Tensor) -> GomokuState:
        """White plays `actions` (ignored on done rows), then black replies where play goes on."""
        return self._play(state, actions)[0]

    def _play(self, state: GomokuState, actions: torch.Tensor) -> tuple[GomokuState, torch.Tensor]:
        """`step` plus black's replies Long[B] (-1 where black did not move)."""
        board, n = state.board, self.board_size
        b, dev = board.shape[0], board.device
        if board.shape[1:] != (n, n):
            raise ValueError(
                f"GomokuEnv.step: expected boards of {n}x{n}, got {tuple(board.shape[1:])}."
            )
        if actions.shape != (b,):
            raise ValueError(
                f"GomokuEnv.step: expected actions of shape ({b},), got {tuple(actions.shape)}."
            )
        live = (~state.done).nonzero().squeeze(1)
        cells = actions[live]
        flat = board.reshape(b, -1).clone()
        if bool(((cells < 0) | (cells >= self.num_cells)).any()) or bool(
            (flat[live, cells.clamp(0, self.num_cells - 1)] != 0).any()
        ):
            raise ValueError(
                "GomokuEnv.step: actions must be empty cells on rows that are not done."
            )
        flat[live, cells] = 1
        white_won = torch.zeros(b, dtype=torch.bool, device=dev)
        white_won[live] = has_five(flat[live].view(-1, n, n))
        done = state.done | white_won | (flat != 0).all(dim=1)
        reply = torch.full((b,), -1, dtype=torch.long, device=dev)
        answer = (~done).nonzero().squeeze(1)
        black_won = torch.zeros(b, dtype=torch.bool, device=dev)
        if answer.numel() > 0:
            black_view = -flat[answer].view(-1, n, n)
            reply[answer] = BOTS[self.bot](black_view)
            flat[answer, reply[answer]] = -1
            black_won[answer] = has_five(-flat[answer].view(-1, n, n))
            done = done | black_won | (flat != 0).all(dim=1)
        winner = torch.where(white_won, 1, torch.where(black_won, -1, state.winner))
        new = GomokuState(board=flat.view(b, n, n), done=done, winner=winner.to(torch.int8))
        return new, reply

    def action_mask(self, state: GomokuState) -> torch.Tensor:
        """Empty cells of games still running; all False on done rows."""
        return (state.board == 0).flatten(1) & ~state.done.unsqueeze(1)

    def is_done(self, state: GomokuState) -> torch.Tensor:
        return state.done

    def objective(self, state: GomokuState) -> torch.Tensor:
        """+1 white win, 0 draw, -1 black win (float64)."""
        return state.winner.to(torch.float64)

    def validation_metrics(self, objective: torch.Tensor) -> dict[str, float]:
        """Counts of white wins, draws and losses among game results (logged as val/wins ...)."""
        return {
            "wins": float((objective == 1).sum()),
            "draws": float((objective == 0).sum()),
            "losses": float((objective == -1).sum()),
        }

    def max_steps(self, instances: GomokuInstances) -> int:
        """ceil(N * N / 2): white can never make more moves than that."""
        return math.ceil(self.num_cells / 2)

    def replay(
        self, instances: GomokuInstances, actions: torch.Tensor
    ) -> tuple[GomokuState, torch.Tensor]:
        """Play white's `actions` Long[B, T] (pad -1) to the end of each game.

        Returns the final states and every ply in order, Long[B, 2T + 1] (pad -1): black's
        opening, white's first move, black's reply, ... Raises ValueError when a row's
        actions do not form exactly one complete game.
        """
        state = self.reset(instances)
        b, t = actions.shape
        plies = torch.full((b, 2 * t + 1), -1, dtype=torch.long, device=actions.device)
        plies[:, 0] = instances.opening
        for j in range(t):
            moving = ~state.done
            if bool((moving & (actions[:, j] < 0)).any()) or bool(
                (~moving & (actions[:, j] >= 0)).any()
            ):
                raise ValueError(
                    "GomokuEnv.replay: actions must be complete games, padded with -1 after "
                    "the end."
                )
            state, reply = self._play(state, actions[:, j])
            plies[:, 2 * j + 1] = torch.where(moving, actions[:, j], -1)
            plies[:, 2 * j + 2] = reply
        if not bool(state.done.all()):
            raise ValueError("GomokuEnv.replay: actions must be complete games; some did not end.")
        return state, plies

    def _replay_cached(
        self, instances: GomokuInstances, actions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`replay`'s winners Int8[B] and plies Long[B, 2T + 1], replaying only games not seen
        among the last REPLAY_CACHE ones (black's replies cost a bot call per ply)."""
        openings, rows = instances.opening.cpu(), actions.cpu()
        keys = [(int(o), row.numpy().tobytes()) for o, row in zip(openings, rows, strict=True)]
        missing = list({key: i for i, key in enumerate(keys) if key not in self._replays}.values())
        if missing:
            idx = torch.tensor(missing, device=actions.device)
            final, plies = self.replay(instances.index(idx), actions[idx])
            for i, p, w in zip(missing, plies.cpu(), final.winner.cpu(), strict=True):
                self._replays[keys[i]] = (p[p >= 0], int(w))
        width = 2 * actions.shape[1] + 1
        plies = torch.full((len(keys), width), -1, dtype=torch.long)
        winner = torch.zeros(len(keys), dtype=torch.int8)
        for i, key in enumerate(keys):
            game, winner[i] = self._replays[key]
            self._replays.move_to_end(key)
            plies[i, : game.shape[0]] = game
        while len(self._replays) > REPLAY_CACHE:
            self._replays.popitem(last=False)
        return winner.to(actions.device), plies.to(actions.device)

    def training_batch(
        self,
        instances: GomokuInstances,
        actions: torch.Tensor,
        generator: torch.Generator | None = None,
    ) -> tuple[GomokuState, torch.Tensor]:
        """The board before a random move of each complete game and that move (the target).

        With learn_from="white" the move is one of white's; with "winner" it is one of black's
        replies in games black won (the board then shows black as +1, the mover), else white's.
        """
        winner, plies = self._replay_cached(instances, actions)
        b, n = actions.shape[0], self.board_size
        dev = actions.device
        lengths = (actions >= 0).sum(dim=1)
        j = (torch.rand(b, generator=generator).to(dev) * lengths).long()
        black = (
            (winner == -1)
            if self.learn_from == "winner"
            else torch.zeros_like(winner, dtype=torch.bool)
        )
        ply = torch.where(black, 2 * j + 2, 2 * j + 1)
        target = plies.gather(1, ply.unsqueeze(1)).squeeze(1)
        order = torch.arange(plies.shape[1], device=dev)
        placed = (order.unsqueeze(0) < ply.unsqueeze(1)) & (plies >= 0)
        colour = torch.where(order % 2 == 0, -1, 1).unsqueeze(0)  # black plies are even
        mover = torch.where(black, -1, 1).unsqueeze(1)
        stones = torch.where(placed, colour * mover, 0)
        board = torch.zeros(b, self.num_cells, dtype=torch.long, device=dev)
        board.scatter_add_(1, plies.clamp_min(0), stones)
        state = GomokuState(
            board=board.to(torch.int8).view(b, n, n),
            done=torch.zeros(b, dtype=torch.bool, device=dev),
            winner=torch.zeros(b, dtype=torch.int8, device=dev),
        )
        return state, target
