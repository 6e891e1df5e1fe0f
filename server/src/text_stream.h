// Filters over streamed generated text: stop strings held back until they can be ruled out, and
// a reasoning model's <think>...</think> split from the answer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ember::server {

// Passes text through until one of the stop strings appears; the stop string and everything
// after it are dropped. Text that could be the start of a stop string is held back until the
// next piece shows whether it is, so a stop string never reaches the client, even split over
// several tokens.
class StopFilter {
public:
    explicit StopFilter(std::vector<std::string> stops) : m_stops(std::move(stops)) {}
    // Adds a piece; returns the text that can be sent now.
    std::string push(std::string_view text);
    // At the end of generation: the text still held back (none once stopped).
    std::string flush();
    bool stopped() const { return m_stopped; }

private:
    std::vector<std::string> m_stops;
    std::string m_held;
    bool m_stopped = false;
};

// Splits a reasoning model's output into reasoning (inside <think>...</think> at the start) and
// content (the rest), holding back what could be the start of a tag. A template that opens the
// think block in the prompt starts the splitter inside it.
class ThinkSplitter {
public:
    struct Parts {
        std::string content, reasoning;
        bool empty() const { return content.empty() && reasoning.empty(); }
    };
    explicit ThinkSplitter(bool start_in_reasoning = false);
    Parts push(std::string_view text);
    Parts flush();

private:
    void output(std::string_view text, Parts& out);
    enum class State { Start, Reasoning, Content };
    State m_state;
    std::string m_held;
    bool m_trim = false;  // drop the whitespace that follows a tag
};

// True when a rendered prompt ends inside an opened think block (the generation prompt of
// Qwen3's and DeepSeek-R1's templates), so that the output starts with reasoning.
bool prompt_opens_think(std::string_view prompt);

}  // namespace ember::server
