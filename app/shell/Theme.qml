import QtQuick

// The app's colours for the light and the dark theme: the only QML file with colour values
// (tests/app/check_colours.sh keeps it so). A component creates one with
// `Theme { id: theme; dark: Material.theme === Material.Dark }`.
QtObject {
    property bool dark: false

    // Window parts.
    readonly property color header: dark ? "#202226" : "#fafafa"
    readonly property color headerText: dark ? "#e8e8e8" : "#202124"
    readonly property color sidebar: dark ? "#18191c" : "#eef0f3"
    readonly property color assistantBubble: dark ? "#2a2c31" : "#f3f4f6"
    readonly property color link: dark ? "#8ab4f8" : "#1a5fb4"

    // Notices: error and information banners.
    readonly property color errorText: dark ? "#f6aea9" : "#8a1c12"
    readonly property color errorBackground: dark ? "#3b1f1d" : "#fdecea"
    readonly property color errorBorder: dark ? "#6e2f2a" : "#f5c2bd"
    readonly property color infoText: dark ? "#a8c7fa" : "#17406d"
    readonly property color infoBackground: dark ? "#1c2b3f" : "#e8f1fd"
    readonly property color infoBorder: dark ? "#34507a" : "#bcd3f5"

    // States: failure, warning, success, neutral.
    readonly property color failure: dark ? "#ef5350" : "#c62828"
    readonly property color warning: dark ? "#ffb74d" : "#b26a00"
    readonly property color success: dark ? "#66bb6a" : "#2e7d32"
    readonly property color neutral: dark ? "#9aa5b4" : "#5f6b7a"
    readonly property color unknown: "#9e9e9e"
    readonly property color currentRow: Qt.rgba(1, 0.34, 0.13, 0.08)

    // Code blocks: dark in both themes, with their own highlighting colours.
    readonly property color codeBackground: "#1f2228"
    readonly property color codeBorder: dark ? "#33373f" : "#1f2228"
    readonly property color codeLabel: "#9aa0aa"
    readonly property color codeText: "#e6e6e6"
    readonly property color codeSelection: "#3d5a80"
    readonly property color codeKeyword: "#c792ea"
    readonly property color codeType: "#82aaff"
    readonly property color codeString: "#c3e88d"
    readonly property color codeComment: "#7f8690"
    readonly property color codeNumber: "#f78c6c"

    // The performance overlay.
    readonly property color overlayBackground: dark ? Qt.rgba(0.09, 0.10, 0.11, 0.93) : Qt.rgba(1, 1, 1, 0.96)
    readonly property color overlayBorder: dark ? Qt.rgba(1, 1, 1, 0.10) : Qt.rgba(0, 0, 0, 0.12)
    readonly property color overlayDivider: dark ? Qt.rgba(1, 1, 1, 0.08) : Qt.rgba(0, 0, 0, 0.08)
    readonly property color overlayTitle: dark ? "#9aa0a6" : "#5f6368"
    readonly property color overlayValue: dark ? "#f1f3f4" : "#202124"
    readonly property color overlayLabel: dark ? "#b0b3b8" : "#5f6368"
    readonly property color overlayCaption: "#80868b"
    readonly property color overlayStrong: dark ? "#ffffff" : "#202124"
    readonly property color idle: "#5f6368"
    readonly property color track: dark ? Qt.rgba(1, 1, 1, 0.15) : Qt.rgba(0, 0, 0, 0.12)
    readonly property color trackFaint: dark ? Qt.rgba(1, 1, 1, 0.04) : Qt.rgba(0, 0, 0, 0.03)
    readonly property color meterLow: success
    readonly property color meterHigh: dark ? "#ffca28" : "#e6a100"
    readonly property color meterFull: failure
    readonly property color sparkline: "#ff7043"

    // `c` with opacity `a`.
    function alpha(c, a) { return Qt.rgba(c.r, c.g, c.b, a) }
}
