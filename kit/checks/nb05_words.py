"""What notebook 05's checkers (nb05_grpo_loss) say, English beside
Japanese: one table, so a reviewer reads all its words in one place."""

# What group_advantages's checker says, English beside Japanese: its hint
# ladder (gentlest first), each mistake's (title, why, hint).
GROUP_ADVANTAGES_WORDS = {
    "hints": {
        "en": ["rewards.view(-1, num_generations) puts each prompt's G "
               "completions on one row, (B, G): normalise within each row, "
               "not over the whole batch, and not along view(G, -1)'s rows.",
               "Subtract each row's mean, then divide by its std + 1e-4 "
               "(keepdim=True to broadcast): the std puts the groups of easy "
               "and hard prompts on one scale.",
               "torch's default std is unbiased (divides by G − 1), as "
               "TRL's: no unbiased=False.",
               "Return the same layout as the input: .view(-1)."],
        "ja": ["rewards.view(-1, num_generations) で各プロンプトの G 個の補完"
               "が 1 行に並びます (B, G): バッチ全体でも view(G, -1) の行でも"
               "なく、各行の中で正規化してください。",
               "各行の平均を引き、その標準偏差 + 1e-4 で割ります (ブロードキ"
               "ャストのため keepdim=True): 標準偏差が、易しいプロンプトと難"
               "しいプロンプトのグループを同じ尺度にそろえます。",
               "torch の既定の std は不偏 (G − 1 で割る) で、TRL と同じです: "
               "unbiased=False は付けません。",
               "入力と同じ並びで返します: .view(-1)。"]},
    "whole_batch": {
        "en": ("whole-batch normalisation",
               "the baseline is each prompt's own group: an easy prompt's "
               "completions should not all look good",
               "view(-1, G) and normalise each row"),
        "ja": ("バッチ全体での正規化",
               "ベースラインは各プロンプト自身のグループです。易しいプロンプ"
               "トの補完がすべて良く見えてはいけません",
               "view(-1, G) として各行を正規化してください")},
    "population_std": {
        "en": ("population std",
               "torch's default std is unbiased (divides by G − 1), as TRL's",
               "drop unbiased=False / correction=0"),
        "ja": ("母標準偏差",
               "torch の既定の std は不偏 (G − 1 で割る) で、TRL と同じです",
               "unbiased=False / correction=0 を外してください")},
    "view_G_minus_1": {
        "en": ("view(G, -1)",
               "that makes G rows of consecutive rewards; a prompt's G "
               "completions sit next to each other, so a group is a row of "
               "view(-1, G)",
               "rewards.view(-1, num_generations)"),
        "ja": ("view(G, -1)",
               "これでは連続する報酬の G 行になります。プロンプトの G 個の補"
               "完は隣り合っているので、グループは view(-1, G) の 1 行です",
               "rewards.view(-1, num_generations)")},
    "no_std": {
        "en": ("no std normalisation",
               "the mean is subtracted but the spread is left: a group whose "
               "rewards differ a lot then pushes harder than one whose "
               "rewards differ a little",
               "divide by grouped.std(dim=1, keepdim=True) + 1e-4"),
        "ja": ("標準偏差で正規化していない",
               "平均は引いても散らばりはそのままです。報酬の差が大きいグルー"
               "プが、差の小さいグループより強く押すことになります",
               "grouped.std(dim=1, keepdim=True) + 1e-4 で割ってください")},
    "property:equal_rewards": {
        "en": ("a group of equal rewards",
               "right where each group's rewards differ, wrong where a "
               "group's are all equal (G=2: [1, 1]): its std is 0, and only "
               "the + 1e-4 inside the division keeps the advantage 0, "
               "not 0/0"),
        "ja": ("報酬がすべて等しいグループ",
               "各グループの報酬がばらつくときは正しく、グループの報酬がすべ"
               "て等しいとき (G=2: [1, 1]) に違います。その std は 0 で、割り"
               "算の中の + 1e-4 だけがアドバンテージを 0/0 でなく 0 に保ちま"
               "す")},
    "property:rewards_close_together": {
        "en": ("rewards close together",
               "right where rewards lie hundreds apart, wrong where they lie "
               "within a few units: there the + 1e-4 in the division shows, "
               "so it belongs to the std, (std + 1e-4)"),
        "ja": ("近い報酬",
               "報酬が数百離れているときは正しく、数単位の範囲にあると違いま"
               "す。そこでは割り算の + 1e-4 が効くので、std に足します "
               "(std + 1e-4)")},
    "property:scaled_otherwise": {
        "en": ("each group divided by another spread",
               "each of your advantages has the reference's sign (0 where "
               "it is 0) but another size: the mean you subtract is the "
               "group's, the division is not. Divide each group by its own "
               "std + 1e-4: grouped.std(dim=1, keepdim=True), not the "
               "batch's, not its variance, not over dim 0"),
        "ja": ("グループを別の散らばりで割った",
               "アドバンテージの符号はどれも参照実装と同じ (0 のところは 0) "
               "ですが、大きさが違います。引く平均はグループのもので、割る数"
               "が違います。各グループを自分の std + 1e-4 で割ります。"
               "grouped.std(dim=1, keepdim=True) で、バッチの std でも分散で"
               "も dim 0 方向でもありません")},
    "property:groups_off_centre": {
        "en": ("a group's advantages do not sum to 0",
               "a prompt's G completions are G consecutive rewards, one row "
               "of rewards.view(-1, G); subtracting that row's own mean "
               "makes each row's advantages sum to 0, and some of yours do "
               "not: the mean you subtract is not each group's "
               "(grouped.mean(dim=1, keepdim=True))"),
        "ja": ("グループのアドバンテージの和が 0 でない",
               "プロンプトの G 個の補完は連続する G 個の報酬で、"
               "rewards.view(-1, G) の 1 行です。その行自身の平均を引けば各行"
               "のアドバンテージの和は 0 になりますが、あなたの答えには 0 に"
               "ならない行があります。引いている平均が各グループのものではあ"
               "りません (grouped.mean(dim=1, keepdim=True))")},
    "property:num_generations_written_in": {
        "en": ("G written in",
               "right at one num_generations only, wrong at the others: "
               "group with rewards.view(-1, num_generations)"),
        "ja": ("G の決め打ち",
               "1 つの num_generations でだけ正しく、ほかの値では違います: "
               "rewards.view(-1, num_generations) でグループに分けます")},
}


# What grpo_loss's checker says, English beside Japanese: its hint ladder
# (gentlest first), each mistake's (title, why, hint), its judge's lines.
GRPO_LOSS_WORDS = {
    "hints": {
        "en": ["ratio = exp(per_token_logps − old_per_token_logps), new "
               "minus old: above 1 where the policy now likes a token more; "
               "1 on-policy.",
               "Per token: −min(ratio·A, clamp(ratio, 1−ε, 1+ε)·A), with A "
               "unsqueezed to (B, 1). The min is what makes the clip a "
               "pessimistic bound; the minus turns the objective GRPO "
               "maximises into a loss the Trainer minimises.",
               "Clip with the epsilon you are given: clamp(ratio, 1 - "
               "epsilon, 1 + epsilon), not 0.8 and 1.2.",
               "Mean over each completion's own tokens (mask!), then mean "
               "over completions.",
               "The KL is a penalty: + beta * per_token_kl(per_token_logps, "
               "ref_per_token_logps), in that order, and only when beta > 0 "
               "— with beta = 0 there is no reference (None).",
               "Keep the loss differentiable in per_token_logps: no "
               ".detach(), no torch.no_grad() — that is the policy being "
               "trained."],
        "ja": ["ratio = exp(per_token_logps − old_per_token_logps)、新 − 旧："
               "方策がそのトークンを前より好むところで 1 より大きく、オンポリ"
               "シーでは 1 です。",
               "トークンごとに: −min(ratio·A, clamp(ratio, 1−ε, 1+ε)·A)。A は"
               " (B, 1) に unsqueeze します。min がクリップを悲観的な下限にし"
               "、マイナスが GRPO の最大化する目的関数を Trainer が最小化する"
               "損失に変えます。",
               "与えられた epsilon でクリップします: 0.8 と 1.2 ではなく "
               "clamp(ratio, 1 - epsilon, 1 + epsilon)。",
               "各補完の自分のトークンで平均し (マスク!)、それから補完で平均"
               "します。",
               "KL はペナルティです: + beta * per_token_kl(per_token_logps, "
               "ref_per_token_logps)、この順で、beta > 0 のときだけ。beta = "
               "0 では参照モデルがありません (None)。",
               "損失は per_token_logps について微分可能なままにします: "
               ".detach() も torch.no_grad() も使いません。それが学習中の方"
               "策です。"]},
    "no_min": {
        "en": ("no min",
               "the clipped term alone gives no gradient where the ratio is "
               "clipped, even when moving back would help",
               "−min(ratio·A, clipped·A): the min keeps the pessimistic one"),
        "ja": ("min がない",
               "クリップした項だけでは、比率がクリップされたところで勾配が出"
               "ません。戻ったほうがよいときでもです",
               "−min(ratio·A, clipped·A): min が悲観的なほうを残します")},
    "max_not_min": {
        "en": ("max instead of min",
               "the loss is minus the objective: −min(...) is the "
               "pessimistic bound, −max(...) the optimistic one",
               "torch.min(ratio * A, clipped * A)"),
        "ja": ("min ではなく max",
               "損失は目的関数の符号を反転したものです: −min(...) が悲観的な"
               "下限、−max(...) は楽観的なものです",
               "torch.min(ratio * A, clipped * A)")},
    "min_of_the_ratios": {
        "en": ("the min of the ratios",
               "min(ratio, clipped) · A is min(ratio·A, clipped·A) only where "
               "A ≥ 0: where A < 0 the product turns the min into a max, the "
               "optimistic bound",
               "take the min of the products: torch.min(ratio * A, clipped * "
               "A)"),
        "ja": ("比率の min",
               "min(ratio, clipped) · A が min(ratio·A, clipped·A) と等しいの"
               "は A ≥ 0 のときだけです。A < 0 では掛け算で min が max に変わ"
               "り、楽観的なほうになります",
               "積の min を取ります: torch.min(ratio * A, clipped * A)")},
    "clipped_below_only": {
        "en": ("clipped from below only",
               "with no upper bound, a token whose ratio is past 1 + epsilon "
               "and whose advantage is positive is still pushed up",
               "clip both sides: torch.clamp(ratio, 1 - epsilon, 1 + "
               "epsilon)"),
        "ja": ("下側だけのクリップ",
               "上限がないと、比率がすでに 1 + epsilon を超えていてアドバンテ"
               "ージが正のトークンも、まだ押し上げられます",
               "両側をクリップします: torch.clamp(ratio, 1 - epsilon, 1 + "
               "epsilon)")},
    "token_level_mean": {
        "en": ("token-level mean",
               "one mean over all tokens weighs long completions more; "
               "GRPO's eq. 3 averages each completion's tokens first",
               "(per_token * mask).sum(1) / mask.sum(1), then .mean()"),
        "ja": ("トークン単位の平均",
               "全トークンで 1 つの平均を取ると長い補完が重くなります。GRPO "
               "の式 3 はまず各補完のトークンで平均します",
               "(per_token * mask).sum(1) / mask.sum(1)、それから .mean()")},
    "no_mask": {
        "en": ("no mask",
               "tokens after <eos> (padding) count in each completion's mean",
               "multiply by completion_mask and divide by its sum per row"),
        "ja": ("マスクがない",
               "<eos> 以降のトークン (パディング) が各補完の平均に入ります",
               "completion_mask を掛け、行ごとにその和で割ってください")},
    "detached_logps": {
        "en": ("detached log-probs",
               "the loss has no gradient: per_token_logps (the policy being "
               "trained) was detached or computed under no_grad",
               "do not .detach() per_token_logps or the loss "
               "(old_per_token_logps is already)"),
        "ja": ("切り離された対数確率",
               "損失が勾配を持っていません: per_token_logps (学習中の方策) が"
               "切り離されたか、no_grad の下で計算されました",
               "per_token_logps も損失も .detach() しないでください "
               "(old_per_token_logps はすでに切り離されています)")},
    "kl_when_beta_0": {
        "en": ("KL added when beta = 0",
               "with beta = 0 there is no reference: ref_per_token_logps is "
               "None, and None − tensor is a TypeError in the trainer",
               "add the KL only inside `if beta > 0:`"),
        "ja": ("beta = 0 で KL を加えた",
               "beta = 0 では参照モデルがありません: ref_per_token_logps は "
               "None で、None − tensor はトレーナーで TypeError になります",
               "KL は `if beta > 0:` の中でだけ加えてください")},
    "clip_hard_coded": {
        "en": ("clip hard-coded to 0.8/1.2",
               "the clip ignores epsilon: right for ε = 0.2 only",
               "torch.clamp(ratio, 1 - epsilon, 1 + epsilon)"),
        "ja": ("クリップを 0.8/1.2 に固定",
               "クリップが epsilon を無視しています。正しいのは ε = 0.2 のと"
               "きだけです",
               "torch.clamp(ratio, 1 - epsilon, 1 + epsilon)")},
    "kl_sign_reversed": {
        "en": ("KL sign reversed",
               "−β·KL rewards the policy for moving away from the reference: "
               "the penalty pulls it back",
               "per_token + beta * per_token_kl(...)"),
        "ja": ("KL の符号が逆",
               "−β·KL は参照モデルから離れるほど方策に報酬を与えます。ペナル"
               "ティは引き戻すものです",
               "per_token + beta * per_token_kl(...)")},
    "kl_weight_written_in": {
        "en": ("KL weight written in",
               "the KL is weighed by 0.04 (TRL's old default) whatever beta "
               "the caller passes",
               "multiply the KL by the beta argument"),
        "ja": ("KL の重みの決め打ち",
               "呼び出し側が渡す beta にかかわらず、KL に 0.04 (TRL の以前の既"
               "定値) を掛けています",
               "KL には引数の beta を掛けてください")},
    "kl_arguments_swapped": {
        "en": ("KL arguments swapped",
               "GRPO's k3 estimate of KL(π‖ref) is exp(ref − π) − (ref − π) "
               "− 1 on tokens sampled from π; swapped, it is another "
               "penalty, exponential where π outgrows ref",
               "per_token_kl(per_token_logps, ref_per_token_logps)"),
        "ja": ("KL の引数が逆",
               "GRPO の KL(π‖ref) の k3 推定は、π からサンプリングしたトーク"
               "ンでの exp(ref − π) − (ref − π) − 1 です。逆にすると別のペナ"
               "ルティになり、π が ref を上回るところで指数的に増えます",
               "per_token_kl(per_token_logps, ref_per_token_logps)")},
    "ratio_inverted": {
        "en": ("ratio as exp(old − new)",
               "the ratio is π/π_old: inverted, the clip and the gradient "
               "push the wrong way off-policy",
               "torch.exp(per_token_logps - old_per_token_logps)"),
        "ja": ("比率を exp(old − new) にした",
               "比率は π/π_old です。逆にすると、オフポリシーでクリップと勾配"
               "が逆向きに押します",
               "torch.exp(per_token_logps - old_per_token_logps)")},
    "no_minus": {
        "en": ("no minus sign",
               "min(ratio·A, clipped·A) is the objective to maximise; the "
               "Trainer minimises, so the policy would learn to do worse",
               "-torch.min(ratio * A, clipped * A)"),
        "ja": ("マイナス符号がない",
               "min(ratio·A, clipped·A) は最大化する目的関数です。Trainer は"
               "最小化するので、方策は悪くなるように学習してしまいます",
               "-torch.min(ratio * A, clipped * A)")},
    "judge.shape": {
        "en": "the loss should be one number, got shape {shape}",
        "ja": "損失は 1 つの数であるべきですが、形状は {shape} でした"},
    "judge.no gradient": {
        "en": "the loss has no gradient: keep per_token_logps in the "
              "computation (do not detach it)",
        "ja": "損失が勾配を持っていません: per_token_logps を計算に残してく"
              "ださい (切り離さないでください)"},
    "property:epsilon_written_in": {
        "en": ("epsilon written in",
               "right at one epsilon only, wrong at the others: clip with "
               "the epsilon argument, 1 - epsilon to 1 + epsilon"),
        "ja": ("epsilon の決め打ち",
               "1 つの epsilon でだけ正しく、ほかの値では違います。引数の "
               "epsilon で 1 - epsilon から 1 + epsilon にクリップします")},
    "property:kl_term": {
        "en": ("the KL term",
               "right while beta = 0, wrong where beta > 0: add beta times "
               "per_token_kl(per_token_logps, ref_per_token_logps) to each "
               "token's loss"),
        "ja": ("KL の項",
               "beta = 0 では正しく、beta > 0 で違います。各トークンの損失に "
               "beta × per_token_kl(per_token_logps, ref_per_token_logps) を"
               "足します")},
    "property:beta_written_in": {
        "en": ("beta written in",
               "right at one beta only, wrong at the others: weigh the KL by "
               "the beta argument, and add none when it is 0"),
        "ja": ("beta の決め打ち",
               "1 つの beta でだけ正しく、ほかの値では違います: KL には引数の "
               "beta を掛け、0 のときは足しません")},
    "property:masked_tokens": {
        "en": ("masked tokens",
               "right where no token is masked, wrong where a completion "
               "ends early: each completion's mean runs over its own "
               "unmasked tokens"),
        "ja": ("マスクされたトークン",
               "マスクされたトークンがないときは正しく、早く終わる補完がある"
               "と違います。各補完の平均はマスクされていない自分のトークンだ"
               "けで取ります")},
    "property:ratio_beyond_the_clip": {
        "en": ("ratios beyond the clip",
               "right while every ratio stays within 1 ± epsilon, wrong "
               "where some go beyond: the min of the unclipped and the "
               "clipped term is what the clip acts through"),
        "ja": ("クリップを超える比率",
               "どの比率も 1 ± epsilon に収まるときは正しく、超えるものがある"
               "と違います。クリップは、クリップしない項とした項の min を通し"
               "て働きます")},
    "property:ratio_moves_on_policy": {
        "en": ("the ratio on-policy",
               "on-policy per_token_logps equals old_per_token_logps, every "
               "ratio is 1, and each token of a completion gets the same "
               "gradient, −A divided by the same count; yours changes from "
               "token to token, so your ratio is not 1 there: it is "
               "exp(per_token_logps − old_per_token_logps), not the new "
               "probability, not new / old, not exp(new + old)"),
        "ja": ("オンポリシーでの比率",
               "オンポリシーでは per_token_logps が old_per_token_logps と等し"
               "く、比率はすべて 1 で、補完の各トークンは同じ勾配 (同じ数で割"
               "った −A) を受けます。あなたの勾配はトークンごとに変わるので、"
               "比率がそこで 1 になっていません。比率は "
               "exp(per_token_logps − old_per_token_logps) で、新しい確率で"
               "も new / old でも exp(new + old) でもありません")},
    "property:clip_elsewhere": {
        "en": ("the clip's bounds",
               "token by token your gradient is the reference's, either the "
               "full −A·ratio or none where the clip stops it, but it stops "
               "at other ratios: the reference stops where A > 0 and "
               "ratio > 1 + epsilon, or A < 0 and ratio < 1 − epsilon. "
               "Clip with torch.clamp(ratio, 1 - epsilon, 1 + epsilon): "
               "lower bound first"),
        "ja": ("クリップの範囲",
               "トークンごとに見ると、あなたの勾配は参照実装のもの (そのまま"
               "の −A·ratio か、クリップが止めたところでは 0) ですが、止まる"
               "比率が違います。参照実装は A > 0 で ratio > 1 + epsilon、A < "
               "0 で ratio < 1 − epsilon のところで止まります。"
               "torch.clamp(ratio, 1 - epsilon, 1 + epsilon) でクリップしま"
               "す (下限が先です)")},
    "property:off_policy": {
        "en": ("a policy that has moved",
               "right on-policy, where every ratio is 1, wrong once "
               "per_token_logps differs from old_per_token_logps: the ratio "
               "is exp(new − old)"),
        "ja": ("動いた方策",
               "比率がすべて 1 になるオンポリシーでは正しく、per_token_logps "
               "が old_per_token_logps と違うと違います。比率は exp(new − "
               "old) です")},
    "judge.passed": {
        "en": "loss and gradient {verdict}, for several epsilon, with and "
              "without KL",
        "ja": "損失と勾配が、いくつかの epsilon で、KL ありとなしで "
              "{verdict}"},
}
