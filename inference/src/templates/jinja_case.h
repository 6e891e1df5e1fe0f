// Python's str case mapping and character classes on UTF-8 text, from ICU's Unicode data:
// upper(), lower() (with Greek final sigma), capitalize(), title(), Jinja2's title filter,
// isupper() / islower() / isalpha() / isdigit() / isalnum() / isspace().
// Bytes that are not valid UTF-8 pass through unchanged and count as uncased, not a letter.
#pragma once

#include <string>
#include <string_view>

namespace ember::jinja {

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // str.capitalize(): first titlecased, rest lower
std::string py_title(std::string_view s);       // str.title(): after a cased char lower, else title
// Jinja2's title filter: words start after whitespace, '-', '(', '{', '[' or '<'; each word's
// first character is upper-cased (Python's upper(), not its titlecase) and the rest lower-cased.
std::string jinja_title(std::string_view s);

bool py_isupper(std::string_view s);
bool py_islower(std::string_view s);
enum class CharClass { Alpha, Digit, Alnum, Space };
// str.isalpha() etc.: true when s is not empty and every character is of the class.
bool py_is(std::string_view s, CharClass c);

}  // namespace ember::jinja
