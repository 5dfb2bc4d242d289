// What tells the operators something is wrong (docs/deployment.md, "Operations"): an action group that mails them, a
// standard availability test of /api/health from several regions, and alerts on the server errors' share, the p95
// latency and, with refreshOnPublish, a message in the poison queue and Event Grid's failed and dead-lettered
// deliveries. Every threshold is a parameter of main.bicep.
param location string
param tags object = {}
param actionGroupName string
param webTestName string
@description('Alert rule names start with it (one deployment\'s rules apart from another\'s in a shared resource group).')
param alertNamePrefix string

@description('Who is told when an alert fires; empty: no action group, and the alerts only show in the portal.')
param alertEmail string = ''

param applicationInsightsName string
param logAnalyticsWorkspaceId string

@description('The app\'s health URL, https://<default host name>/api/health.')
param healthUrl string
@description('Availability test locations (Application Insights location ids).')
param availabilityLocations array
@allowed([
  300
  600
  900
])
param availabilityFrequencySeconds int = 300
@description('Locations that must fail at once before the availability alert fires.')
@minValue(1)
param availabilityFailedLocations int = 2
@description('Text the health answer must hold: the top-level status ok, which only the top level follows with its providers.')
param availabilityContentMatch string
@description('The health alert is on. Off until the app has code: the test runs from the first provision, before a deploy gives /api/health anything to answer (main.bicep, healthAlertEnabled).')
param healthAlertEnabled bool = true

@description('Share of /api/* requests answered 5xx, in percent, above which the error alert fires.')
@minValue(1)
@maxValue(100)
param serverErrorPercent int = 5
@description('p95 duration of /api/* requests (the publish hook apart), in ms, above which the latency alert fires.')
@minValue(100)
param latencyP95Ms int = 3000
@description('Fewest /api/* requests in the window for the error and latency alerts to judge it (two errors in three requests are no outage).')
@minValue(1)
param minimumRequests int = 20
@description('Minutes each request alert looks back over.')
@allowed([
  5
  10
  15
  30
  60
])
param windowMinutes int = 15

@description('refreshOnPublish is on: the poison queue and Event Grid alerts exist.')
param refreshOnPublish bool = false
@description('The refresh queue\'s own storage account (app/refresh-queue.bicep), whose queue logs record the poison queue\'s arrivals.')
param refreshQueueAccountName string
@description('The refresh queue\'s poison queue (<queue>-poison).')
param poisonQueueName string = ''
@description('Messages moved to the poison queue within an hour that fire the poison alert.')
@minValue(1)
param poisonMessages int = 1
@description('Resource id of the docs account\'s Event Grid system topic (refreshOnPublish).')
param docsEventsTopicId string = ''
@description('Failed Event Grid delivery attempts within an hour that fire the delivery alert (each event is retried, so a few are noise).')
@minValue(1)
param deliveryFailures int = 5
@description('Events dead-lettered within an hour that fire the dead-letter alert.')
@minValue(1)
param deadLetteredEvents int = 1

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

var notify = !empty(alertEmail)
var window = 'PT${windowMinutes}M'
var hiddenLink = {
  'hidden-link:${applicationInsights.id}': 'Resource'
}
// The HTTP function's requests only (the timer's and the queue trigger's invocations have no URL), and for latency
// not the publish hook, which waits up to Refresh__WaitSeconds on purpose.
var apiRequests = 'requests | where url has "/api/"'

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (notify) {
  name: actionGroupName
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'docs-ops'
    enabled: true
    emailReceivers: [
      {
        name: 'operators'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

var logActions = {
  actionGroups: notify ? [
    actionGroup.id
  ] : []
}
var metricActions = notify ? [
  {
    actionGroupId: actionGroup.id
  }
] : []

resource serverErrors 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${alertNamePrefix}-server-errors'
  location: location
  tags: union(tags, hiddenLink)
  kind: 'LogAlert'
  properties: {
    displayName: 'Documentation service: server errors'
    description: 'More than ${serverErrorPercent}% of /api/* requests answered 5xx over ${windowMinutes} minutes (at least ${minimumRequests} requests).'
    severity: 1
    enabled: true
    scopes: [
      applicationInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: window
    criteria: {
      allOf: [
        {
          query: '${apiRequests} | summarize total = sum(itemCount), failed = sumif(itemCount, toint(resultCode) >= 500) | where total >= ${minimumRequests} | extend failedPercent = 100.0 * failed / total'
          metricMeasureColumn: 'failedPercent'
          timeAggregation: 'Maximum'
          operator: 'GreaterThan'
          threshold: serverErrorPercent
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: logActions
  }
}

resource latency 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = {
  name: '${alertNamePrefix}-latency-p95'
  location: location
  tags: union(tags, hiddenLink)
  kind: 'LogAlert'
  properties: {
    displayName: 'Documentation service: p95 latency'
    description: 'The 95th percentile of /api/* request durations (the publish hook apart) above ${latencyP95Ms} ms over ${windowMinutes} minutes (at least ${minimumRequests} requests).'
    severity: 2
    enabled: true
    scopes: [
      applicationInsights.id
    ]
    evaluationFrequency: 'PT5M'
    windowSize: window
    criteria: {
      allOf: [
        {
          query: '${apiRequests} and url !has "/api/admin/" | summarize total = sum(itemCount), p95 = percentile(duration, 95) | where total >= ${minimumRequests}'
          metricMeasureColumn: 'p95'
          timeAggregation: 'Maximum'
          operator: 'GreaterThan'
          threshold: latencyP95Ms
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: logActions
  }
}

var locations = [for id in availabilityLocations: {
  Id: id
}]

// A standard test: an HTTPS GET of /api/health from each location, passing only on 200 with the top-level status ok
// (health answers 200 `degraded` when a site or provider fails, 503 `unavailable` when nothing can be searched).
resource healthTest 'Microsoft.Insights/webtests@2022-06-15' = {
  name: webTestName
  location: location
  tags: union(tags, hiddenLink)
  kind: 'standard'
  properties: {
    SyntheticMonitorId: webTestName
    Name: 'GET /api/health is ok'
    Description: 'The documentation service answers /api/health with status ok.'
    Enabled: true
    Frequency: availabilityFrequencySeconds
    Timeout: 30
    Kind: 'standard'
    RetryEnabled: true
    Locations: locations
    Request: {
      RequestUrl: healthUrl
      HttpVerb: 'GET'
      ParseDependentRequests: false
      FollowRedirects: false
    }
    ValidationRules: {
      ExpectedHttpStatusCode: 200
      SSLCheck: true
      SSLCertRemainingLifetimeCheck: 7
      ContentValidation: {
        ContentMatch: availabilityContentMatch
        IgnoreCase: false
        PassIfTextFound: true
      }
    }
  }
}

resource availability 'Microsoft.Insights/metricAlerts@2018-03-01' = {
  name: '${alertNamePrefix}-health'
  location: 'global'
  tags: union(tags, hiddenLink, {
    'hidden-link:${healthTest.id}': 'Resource'
  })
  properties: {
    description: 'GET /api/health did not answer 200 with status ok from ${availabilityFailedLocations} or more locations.'
    severity: 1
    enabled: healthAlertEnabled
    scopes: [
      healthTest.id
      applicationInsights.id
    ]
    evaluationFrequency: 'PT1M'
    // A metric alert's window is one of PT1M, PT5M, PT15M, ...: at least one test run from each location.
    windowSize: availabilityFrequencySeconds <= 300 ? 'PT5M' : 'PT15M'
    criteria: {
      'odata.type': 'Microsoft.Azure.Monitor.WebtestLocationAvailabilityCriteria'
      webTestId: healthTest.id
      componentId: applicationInsights.id
      failedLocationCount: availabilityFailedLocations
    }
    autoMitigate: true
    actions: metricActions
  }
}

// A message the queue trigger gave up on (five failed refreshes of a site) is put on the poison queue; the queue
// service's resource logs (app/refresh-queue.bicep) record each PutMessage there.
resource poisonQueue 'Microsoft.Insights/scheduledQueryRules@2023-12-01' = if (refreshOnPublish) {
  name: '${alertNamePrefix}-poison-queue'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Documentation service: refresh message poisoned'
    description: '${poisonMessages} or more refresh messages moved to ${poisonQueueName} within an hour: a published site failed to refresh five times.'
    severity: 2
    enabled: true
    scopes: [
      logAnalyticsWorkspaceId
    ]
    // StorageQueueLogs exists in the workspace only once the queue service has logged something: validating the
    // query at creation would refuse a first deployment.
    skipQueryValidation: true
    evaluationFrequency: 'PT15M'
    windowSize: 'PT1H'
    criteria: {
      allOf: [
        {
          query: 'StorageQueueLogs | where AccountName == "${refreshQueueAccountName}" and OperationName == "PutMessage" and Uri has "/${poisonQueueName}/messages"'
          timeAggregation: 'Count'
          operator: 'GreaterThanOrEqual'
          threshold: poisonMessages
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: logActions
  }
}

resource deliveryFailuresAlert 'Microsoft.Insights/metricAlerts@2018-03-01' = if (refreshOnPublish) {
  name: '${alertNamePrefix}-event-delivery-failures'
  location: 'global'
  tags: tags
  properties: {
    description: '${deliveryFailures} or more failed Event Grid deliveries to the refresh queue within an hour.'
    severity: 2
    enabled: true
    scopes: [
      docsEventsTopicId
    ]
    evaluationFrequency: 'PT15M'
    windowSize: 'PT1H'
    criteria: {
      'odata.type': 'Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria'
      allOf: [
        {
          criterionType: 'StaticThresholdCriterion'
          name: 'failed-deliveries'
          metricName: 'DeliveryAttemptFailCount'
          metricNamespace: 'Microsoft.EventGrid/systemTopics'
          operator: 'GreaterThanOrEqual'
          threshold: deliveryFailures
          timeAggregation: 'Total'
        }
      ]
    }
    autoMitigate: true
    actions: metricActions
  }
}

resource deadLetteredAlert 'Microsoft.Insights/metricAlerts@2018-03-01' = if (refreshOnPublish) {
  name: '${alertNamePrefix}-events-dead-lettered'
  location: 'global'
  tags: tags
  properties: {
    description: '${deadLetteredEvents} or more index-written events dead-lettered within an hour: their sites were not refreshed.'
    severity: 1
    enabled: true
    scopes: [
      docsEventsTopicId
    ]
    evaluationFrequency: 'PT15M'
    windowSize: 'PT1H'
    criteria: {
      'odata.type': 'Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria'
      allOf: [
        {
          criterionType: 'StaticThresholdCriterion'
          name: 'dead-lettered'
          metricName: 'DeadLetteredCount'
          metricNamespace: 'Microsoft.EventGrid/systemTopics'
          operator: 'GreaterThanOrEqual'
          threshold: deadLetteredEvents
          timeAggregation: 'Total'
        }
      ]
    }
    autoMitigate: true
    actions: metricActions
  }
}

// What azd's postdeploy step turns on once the app has code (infra/hooks/postdeploy.py).
output healthAlertId string = availability.id
